import { describe, expect, it } from 'vitest'
import { FAST_KEYS, FastKeys } from './fast-keys'

describe('keys whose project serves a model at Fast mode', () => {
  it('are bounded in total, over every model: past FAST_KEYS the memory starts again', () => {
    const k = new FastKeys()
    // Spread over many models, as a bound per model would allow FAST_KEYS times the models.
    for (let i = 0; i < FAST_KEYS; i++) k.note('openai', `model-${i % 1000}`, `h${i}`, true)
    expect(k.size).toBe(FAST_KEYS)
    expect(k.has('openai', 'model-0', 'h0')).toBe(true)
    k.note('openai', 'model-x', 'h-new', true)
    expect(k.size).toBe(1)
    expect(k.has('openai', 'model-0', 'h0')).toBe(false)
    expect(k.has('openai', 'model-x', 'h-new')).toBe(true)
  })

  it('forget a key answered at Standard again, and count a key noted twice once', () => {
    const k = new FastKeys()
    k.note('openai', 'gpt-5', 'h', true)
    k.note('openai', 'gpt-5', 'h', true)
    expect(k.size).toBe(1)
    k.note('openai', 'gpt-5', 'h', false)
    k.note('openai', 'gpt-5', 'other', false)
    expect(k.size).toBe(0)
    expect(k.has('openai', 'gpt-5', 'h')).toBe(false)
  })
})
