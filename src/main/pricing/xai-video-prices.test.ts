import { describe, expect, it } from 'vitest'
import { xaiVideoUsd } from './xai-video-prices'

describe('xaiVideoUsd', () => {
  it('prices the seconds at the model\'s per-second price of the resolution', () => {
    expect(xaiVideoUsd('grok-imagine-video', 6, '480p')).toBe(6 * 0.05)
    expect(xaiVideoUsd('grok-imagine-video', 8, '720p')).toBe(8 * 0.07)
    // No model named: xAI's default, grok-imagine-video.
    expect(xaiVideoUsd('', 8, '480p')).toBe(8 * 0.05)
    // A preview, beta or dated name is the model it names.
    expect(xaiVideoUsd('grok-imagine-video-1.5-preview', 10, '720p')).toBe(10 * 0.14)
    expect(xaiVideoUsd('grok-imagine-video-1.5-2026-05-30', 10, '480p')).toBe(10 * 0.08)
    expect(xaiVideoUsd('grok-imagine-video-beta', 1, '480p')).toBe(0.05)
  })

  it('holds too much rather than too little for what it does not list', () => {
    // A resolution the model does not list: its dearest.
    expect(xaiVideoUsd('grok-imagine-video', 5, '1080p')).toBe(5 * 0.07)
    // A model not listed: the dearest listed price of its resolution, else of any.
    expect(xaiVideoUsd('grok-imagine-video-1.5-lite', 5, '480p')).toBe(5 * 0.08)
    expect(xaiVideoUsd('grok-imagine-video-9', 5, '4k')).toBe(5 * 0.25)
  })
})
