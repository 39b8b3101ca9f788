import { describe, expect, it } from 'vitest'
import { LaneSettings, MAX_LANE_BYTES_KEPT, MAX_LANES_KEPT, settingsOf } from './lane-settings'

const MiB = 1024 * 1024
const frame = (model: string, input = 'x') => ({ type: 'response.create', model, service_tier: 'priority', input, metadata: { a: 1 } })

describe('a socket’s lane settings', () => {
  it('keeps at most MAX_LANES_KEPT lanes, letting go of the least recently used', () => {
    const l = new LaneSettings()
    for (let i = 0; i <= MAX_LANES_KEPT; i++) {
      l.set(`lane-${i}`, frame('gpt-4o'), 100)
      // lane-0 is used again each time: lane-1 is the least recently used when the bound is passed
      l.get('lane-0')
    }
    expect(l.held().lanes).toBe(MAX_LANES_KEPT)
    expect(l.get('lane-0')).toBeDefined()
    expect(l.get('lane-1')).toBeUndefined()
    expect(l.get(`lane-${MAX_LANES_KEPT}`)).toBeDefined()
  })

  it('past MAX_LANE_BYTES_KEPT beside the newest frame, the least recently used lanes keep only their settings', () => {
    const l = new LaneSettings()
    l.set('a', frame('gpt-4o', 'a'), 5 * MiB)
    l.set('b', frame('gpt-4o-mini', 'b'), 5 * MiB)
    l.set('c', frame('gpt-4o-mini', 'c'), 5 * MiB)
    expect(l.held().bytes - 5 * MiB).toBeLessThanOrEqual(MAX_LANE_BYTES_KEPT)
    expect(l.get('a')).toEqual({ model: 'gpt-4o', service_tier: 'priority' })
    expect(l.get('b')).toMatchObject({ model: 'gpt-4o-mini', input: 'b' })
    // (c is now the least recently used.) A frame over the bound by itself is kept whole: it is the newest.
    l.set('d', frame('gpt-5', 'd'), 20 * MiB)
    expect(l.held().bytes - 20 * MiB).toBeLessThanOrEqual(MAX_LANE_BYTES_KEPT)
    expect(l.get('c')).toEqual({ model: 'gpt-4o-mini', service_tier: 'priority' })
    expect(l.get('b')).toMatchObject({ input: 'b' })
    expect(l.get('d')).toMatchObject({ input: 'd' })
    // A lane asked for again holds its new frame, and only that.
    l.set('d', frame('gpt-5', 'small'), 100)
    expect(l.held().bytes).toBeLessThan(6 * MiB)
  })

  it('lanes whose names alone are over the bound are let go', () => {
    const l = new LaneSettings()
    const long = (c: string) => c.repeat(9 * MiB)
    l.set(long('a'), frame('gpt-4o'), 9 * MiB + 100)
    l.set(long('b'), frame('gpt-4o'), 9 * MiB + 100)
    expect(l.held().lanes).toBe(1)
    expect(l.get(long('b'))).toBeDefined()
  })

  it('settings are short values only', () => {
    expect(settingsOf({ model: 'm'.repeat(201), service_tier: 'flex', max_output_tokens: 10, background: false, tools: [], prompt_cache_key: { a: 1 } })).toEqual({
      service_tier: 'flex',
      max_output_tokens: 10,
      background: false,
    })
  })
})
