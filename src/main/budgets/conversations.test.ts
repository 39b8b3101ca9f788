import { describe, expect, it } from 'vitest'
import { ConversationMemory } from './conversations'

const usage = (input: number, output: number, cached = 0) => ({ input_tokens: input, output_tokens: output, cache_read_tokens: cached })
const carried = (m: ConversationMemory, id: unknown) => {
  const slot = m.find({ previous_response_id: id })
  return [m.carriedTokens(slot), m.carriedCached(slot)]
}

describe('ConversationMemory', () => {
  it("keeps an answer's prompt and output tokens, and its prompt's cache reads, by its id", () => {
    const m = new ConversationMemory(4)
    m.remember('resp_a', usage(200_000, 1_000, 150_000))
    expect(carried(m, 'resp_a')).toEqual([201_000, 150_000])
    // Not found, not a continuation, or not a string: nothing carried.
    expect(carried(m, 'resp_b')).toEqual([0, 0])
    expect(carried(m, '')).toEqual([0, 0])
    expect(carried(m, 42)).toEqual([0, 0])
    expect(m.find(null)).toBe(-1)
    expect(m.find({ input: 'x' })).toBe(-1)
  })

  it('forgets the oldest answer past its capacity, never one answered again since', () => {
    const m = new ConversationMemory(3)
    m.remember('r1', usage(10, 1))
    m.remember('r2', usage(20, 2))
    m.remember('r1', usage(30, 3))
    m.remember('r3', usage(40, 4))
    // r1's first slot is reused: r1 stays, with its latest usage.
    expect(carried(m, 'r1')).toEqual([33, 0])
    m.remember('r4', usage(50, 5))
    expect(carried(m, 'r2')).toEqual([0, 0])
    expect(carried(m, 'r3')).toEqual([44, 0])
    expect(carried(m, 'r4')).toEqual([55, 0])
    expect(m.size).toBe(3)
  })

  it('adds what a cut turn carried besides its counts (the conversation it continued)', () => {
    const m = new ConversationMemory(4)
    m.remember('resp_cut', usage(12, 40), 201_000, 150_000)
    expect(carried(m, 'resp_cut')).toEqual([201_052, 150_000])
  })

  it('keeps nothing for an answer with no tokens', () => {
    const m = new ConversationMemory(2)
    m.remember('r0', usage(0, 0))
    m.remember('rn', usage(Number.NaN, 5))
    expect(m.size).toBe(0)
  })
})
