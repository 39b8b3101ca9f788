import { calcPrice } from '@pydantic/genai-prices'
import fc from 'fast-check'
import { beforeAll, describe, expect, it } from 'vitest'
import { Pricer } from '../pricing/price'
import { loadPriceLibrary } from '../pricing/library'
import { openai } from '../providers/openai'
import type { CallContext } from '../proxy/gate'
import { CallHistory, DEFAULT_EXPECTED_OUTPUT_TOKENS, expectedUsd } from './expected'
import { promptTokenBound } from './worst-case'

// The price library loads when first needed (../pricing/library.ts); the Pricer refuses to price before.
beforeAll(async () => {
  await loadPriceLibrary()
})

const MODEL = 'gpt-4o-mini'
const price = (input: number, output: number) => calcPrice({ input_tokens: input, output_tokens: output }, MODEL, { providerId: 'openai' })!.total_price

function ctx(maxTokens: number, bodyBytes = 3000): CallContext {
  return {
    provider: openai,
    shape: { endpoint: 'chat.completions', model: MODEL, stream: false, billable: true },
    apiKey: 'sk-x', apiKeyHash: 'h', keyHint: '…', tenant: '', agent: '', session: '',
    ts: Date.now(), body: { model: MODEL, max_tokens: maxTokens }, bodyBytes,
  }
}

describe('expected cost', () => {
  const pricer = new Pricer([])

  it('before 5 answered calls: bytes / 3 of prompt and 4,096 output tokens, capped by max_tokens', () => {
    const h = new CallHistory()
    expect(expectedUsd(pricer, h, ctx(128_000))).toBeCloseTo(price(promptTokenBound(3000), DEFAULT_EXPECTED_OUTPUT_TOKENS), 15)
    expect(expectedUsd(pricer, h, ctx(100))).toBeCloseTo(price(promptTokenBound(3000), 100), 15)
    for (let i = 0; i < 4; i++) h.learn('openai', MODEL, 10, 1e-9, null)
    expect(expectedUsd(pricer, h, ctx(128_000))).toBeCloseTo(price(promptTokenBound(3000), DEFAULT_EXPECTED_OUTPUT_TOKENS), 15)
  })

  it('a requested name with no price (an Azure deployment): 0 until a call is answered, then the price of the model that answered', () => {
    const h = new CallHistory()
    const deployment = ctx(100)
    deployment.shape = { ...deployment.shape, model: 'prod-chat' }
    expect(expectedUsd(pricer, h, deployment)).toBe(0)
    h.learn('openai', 'prod-chat', 10, null, null, MODEL)
    expect(h.answeredAs('openai', 'prod-chat')).toBe(MODEL)
    expect(expectedUsd(pricer, h, deployment)).toBeCloseTo(price(promptTokenBound(3000), 100), 15)
    // A name with a price of its own keeps it, whatever answered.
    h.learn('openai', MODEL, 10, null, null, 'gpt-4o')
    expect(expectedUsd(pricer, h, ctx(100))).toBeCloseTo(price(promptTokenBound(3000), 100), 15)
  })

  it('the window\'s 95th percentile follows each value in and out when most values repeat (one leaving as the same one comes)', () => {
    const h = new CallHistory()
    for (let i = 0; i < 100; i++) h.learn('openai', MODEL, 0, null, null)
    for (let i = 0; i < 5; i++) h.learn('openai', MODEL, 1, null, null)
    expect(h.output('openai', MODEL)).toBe(0) // 95 zeros, 5 ones
    h.learn('openai', MODEL, 1, null, null)
    expect(h.output('openai', MODEL)).toBe(1) // 94 zeros, 6 ones
    for (let i = 0; i < 94; i++) h.learn('openai', MODEL, 0, null, null) // zeros replacing zeros
    expect(h.output('openai', MODEL)).toBe(1)
    h.learn('openai', MODEL, 0, null, null) // the first 1 leaves
    expect(h.output('openai', MODEL)).toBe(0)
    // About one value in 20 is a 1: the 95th percentile turns on how many of the last 100 are.
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 19 }).map((x) => (x === 0 ? 1 : 0)), { minLength: 100, maxLength: 400 }), (outputs) => {
        const w = new CallHistory()
        for (const o of outputs) w.learn('openai', MODEL, o, null, null)
        const last = outputs.slice(-100).sort((a, b) => a - b)
        expect(w.output('openai', MODEL)).toBe(last[94])
      }),
    )
  })

  it('then: the 95th percentile of recent output tokens (capped by max_tokens) and of prompt cost per byte', () => {
    const h = new CallHistory()
    // 100 calls: outputs 1..100 tokens; the p95 is 95. Prompt cost per byte 1e-9 … 100e-9.
    for (let i = 1; i <= 100; i++) h.learn('openai', MODEL, i, i * 1e-9, null)
    expect(h.output('openai', MODEL)).toBe(95)
    expect(h.inputUsdPerByte('openai', MODEL)).toBeCloseTo(95e-9, 20)
    expect(expectedUsd(pricer, h, ctx(128_000, 1000))).toBeCloseTo(95e-9 * 1000 + price(0, 95), 15)
    // Never above the call's worst case (its prompt's bound and its output cap): this learnt rate
    // is more than the model's input price over bytes / 3.
    expect(95e-9 * 1000 + price(0, 50)).toBeGreaterThan(price(promptTokenBound(1000), 50))
    expect(expectedUsd(pricer, h, ctx(50, 1000))).toBeCloseTo(price(promptTokenBound(1000), 50), 15)
    // A call billed with the data-residency premium expects 1.1x, its prompt and its output.
    const geo = ctx(128_000, 1000)
    geo.shape = { ...geo.shape, dataResidency: true }
    expect(expectedUsd(pricer, h, geo)).toBeCloseTo((95e-9 * 1000 + price(0, 95)) * 1.1, 15)
    // One asking for a fast tier: its prompt's bound and its output at the fast price (the learnt per-byte cost is the standard one).
    const fastPricer = new Pricer([{ model: MODEL, speed: 'fast', input_mtok: 1, output_mtok: 4 }])
    const fast = ctx(128_000, 1000)
    fast.shape = { ...fast.shape, fast: true }
    expect(expectedUsd(fastPricer, h, fast)).toBeCloseTo((promptTokenBound(1000) * 1 + 95 * 4) / 1e6, 15)
    expect(expectedUsd(fastPricer, h, ctx(128_000, 1000))).toBeCloseTo(95e-9 * 1000 + price(0, 95), 15)
    // Only the last 100 count: a model that now answers longer raises the expectation.
    for (let i = 0; i < 100; i++) h.learn('openai', MODEL, 1000, 1e-9, null)
    expect(h.output('openai', MODEL)).toBe(1000)
    // Another model has no history of its own.
    expect(h.output('openai', 'gpt-4o')).toBeNull()
  })
})

describe('which model a requested name was answered as, from a read of stored calls (PostgreSQL)', () => {
  it("takes each name's latest answer, and keeps one this process already knows (it may be newer than the read)", () => {
    const h = new CallHistory()
    h.noteAnswered('openai', 'gpt-5-nano', 'gpt-5-nano-2025-08-07')
    h.noteAnsweredFromRead([
      { provider: 'openai', model: 'gpt-5-nano-2025-01-01', requested: 'gpt-5-nano', last: 2 },
      { provider: 'openai', model: 'gpt-4o-2024-11-20', requested: 'gpt-4o', last: 3 },
      { provider: 'openai', model: 'gpt-4o-2024-08-06', requested: 'gpt-4o', last: 1 },
      { provider: 'openai', model: 'gpt-4o-mini', requested: null, last: 4 },
      { provider: 'azure', model: 'gpt-4o-2024-05-13', requested: 'gpt-4o', last: 0 },
    ])
    expect(h.answeredAs('openai', 'gpt-5-nano')).toBe('gpt-5-nano-2025-08-07')
    expect(h.answeredAs('openai', 'gpt-4o')).toBe('gpt-4o-2024-11-20')
    expect(h.answeredAs('azure', 'gpt-4o')).toBe('gpt-4o-2024-05-13')
    expect(h.answeredAs('openai', 'gpt-4o-mini')).toBeUndefined()
  })
})

describe('the 95th percentile of the last 100 calls', () => {
  it('is exactly what sorting the window would give, after every answer (the window is kept sorted)', () => {
    fc.assert(
      fc.property(fc.array(fc.oneof(fc.integer({ min: 0, max: 50 }), fc.double({ min: 0, max: 1e6, noNaN: true })), { maxLength: 400 }), (outputs) => {
        const h = new CallHistory()
        const seen: number[] = []
        for (const v of outputs) {
          h.learn('openai', MODEL, v, v / 1e9, null)
          seen.push(v)
          const window = seen.slice(-100).sort((a, b) => a - b)
          const want = window.length < 5 ? null : window[Math.min(window.length - 1, Math.ceil(0.95 * window.length) - 1)]
          expect(h.output('openai', MODEL)).toBe(want)
          expect(h.inputUsdPerByte('openai', MODEL)).toBe(want === null ? null : window.map((x) => x / 1e9).sort((a, b) => a - b)[Math.min(window.length - 1, Math.ceil(0.95 * window.length) - 1)])
        }
      }),
      { numRuns: 60 },
    )
  })
})
