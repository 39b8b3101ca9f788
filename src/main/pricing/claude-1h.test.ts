import { calcPrice, findProvider } from '@pydantic/genai-prices'
import { beforeAll, describe, expect, it } from 'vitest'
import { emptyUsage, type Usage } from '../metering/usage'
import { withOneHourWrites } from './claude-1h'
import { Pricer } from './price'
import { loadPriceLibrary } from './library'

// The price library loads when first needed (./library.ts); the Pricer refuses to price before.
beforeAll(async () => {
  await loadPriceLibrary()
})

const at = new Date('2026-11-01T00:00:00Z')

function cached(input: number, write: number, write1h: number, output: number): Usage {
  return { ...emptyUsage(), input_tokens: input, cache_write_tokens: write, cache_write_1h_tokens: write1h, output_tokens: output }
}

describe('1-hour cache writes of Claude models the price data gives no 1-hour rate', () => {
  it('on Bedrock and Vertex AI: priced at 2x input, 5-minute writes at their own rate, as Anthropic bills them everywhere', () => {
    const pricer = new Pricer()
    // Claude Sonnet 4.6 on AWS: $3 input, $3.75 5-minute write, $15 output; no 1-hour rate in the data.
    const aws = 'us.anthropic.claude-sonnet-4-6'
    const u = cached(10_000, 3_000, 2_000, 500)
    const got = pricer.price('aws', 'bedrock', aws, u, at)
    // Input leaf 7,000 x $3.3 (the regional profile is 10% above global), 1,000 x $4.125, 2,000 x $6.6, 500 x $16.5.
    expect(got.priced).toBe(true)
    expect(got.cost_usd).toBeCloseTo((7_000 * 3.3 + 1_000 * 4.125 + 2_000 * 6.6 + 500 * 16.5) / 1e6, 15)
    // What the data alone says: the 1-hour writes at the 5-minute rate, 2,000 x (6.6 - 4.125) less.
    const data = calcPrice({ input_tokens: 10_000, cache_write_tokens: 3_000, cache_write_1h_tokens: 2_000, output_tokens: 500 }, aws, { providerId: 'aws', timestamp: at })!.total_price
    expect(got.cost_usd - data).toBeCloseTo((2_000 * (6.6 - 4.125)) / 1e6, 15)
    // The same call remembered (the next ones) is priced the same.
    expect(pricer.price('aws', 'bedrock', aws, u, at)).toEqual(got)
    // Vertex AI (the Google provider's own Claude entries): the same rule.
    const vertex = pricer.price('google', 'vertex', 'claude-sonnet-4-6', u, at)
    expect(vertex.cost_usd).toBeCloseTo((7_000 * 3 + 1_000 * 3.75 + 2_000 * 6 + 500 * 15) / 1e6, 15)
  })

  it('the first call of a model with 1-hour writes and later ones agree, with or without them', () => {
    const pricer = new Pricer()
    const model = 'global.anthropic.claude-opus-4-6-v1:0'
    const with1h = pricer.price('aws', 'bedrock', model, cached(1_000, 400, 400, 10), at)
    const without = pricer.price('aws', 'bedrock', model, cached(1_000, 400, 0, 10), at)
    expect(with1h.cost_usd - without.cost_usd).toBeCloseTo((400 * (10 - 6.25)) / 1e6, 15)
    const fresh = new Pricer()
    fresh.price('aws', 'bedrock', model, cached(1_000, 400, 0, 10), at)
    expect(fresh.price('aws', 'bedrock', model, cached(1_000, 400, 400, 10), at)).toEqual(with1h)
  })

  it('leaves alone a model with its own 1-hour rate, one without cache writes, and models that are not Claude', () => {
    const anthropic = findProvider({ providerId: 'anthropic' })!.models.find((m) => m.id.startsWith('claude-sonnet-4-5'))!
    expect(withOneHourWrites(anthropic)).toBe(anthropic)
    const noCache = { id: 'claude-3-opus', match: { equals: 'x' }, prices: { input_mtok: 15, output_mtok: 75 } }
    expect(withOneHourWrites(noCache)).toBe(noCache)
    const other = { id: 'gpt-5', match: { equals: 'x' }, prices: { input_mtok: 1, cache_write_mtok: 1.25, output_mtok: 10 } }
    expect(withOneHourWrites(other)).toBe(other)
  })

  it('doubles each long-context tier of the input price, in each dated price', () => {
    const m = {
      id: 'claude-sonnet-4-5',
      match: { equals: 'x' },
      prices: [
        { prices: { input_mtok: 3, cache_write_mtok: 3.75, output_mtok: 15 } },
        { constraint: { type: 'start_date' as const, start_date: '2026-01-01' }, prices: { input_mtok: { base: 3, tiers: [{ start: 200_000, price: 6 }] }, cache_write_mtok: 3.75, output_mtok: 15 } },
      ],
    }
    const out = withOneHourWrites(m as any) as any
    expect(out.prices[0].prices.cache_write_1h_mtok).toBe(6)
    expect(out.prices[1].prices.cache_write_1h_mtok).toEqual({ base: 6, tiers: [{ start: 200_000, price: 12 }] })
    expect(out.prices[1].constraint).toEqual(m.prices[1].constraint)
  })
})

describe('a price set for a Claude model by hand', () => {
  // 100k prompt tokens, all written to the cache for an hour: $6/M at Sonnet's $3 input, not the 5-minute $3.75.
  const u = cached(100_000, 100_000, 100_000, 0)
  const list = { input_mtok: 3, output_mtok: 15, cache_read_mtok: 0.3, cache_write_mtok: 3.75 }

  it("a runtime price (the admin API's, which has no 1-hour field) prices 1-hour writes at 2x input, as the library does", () => {
    const library = new Pricer().price('anthropic', 'anthropic', 'claude-sonnet-4-5', u, at)
    expect(library.cost_usd).toBeCloseTo(0.6, 15)
    const p = new Pricer()
    p.setRuntime([{ provider: 'anthropic', model: 'claude-sonnet-4-5', ...list }])
    expect(p.price('anthropic', 'anthropic', 'claude-sonnet-4-5', u, at).cost_usd).toBeCloseTo(0.6, 15)
    // Its own input price doubles: a runtime price of $4 input writes an hour's cache at $8.
    p.setRuntime([{ provider: 'anthropic', model: 'claude-sonnet-4-5', ...list, input_mtok: 4 }])
    expect(p.price('anthropic', 'anthropic', 'claude-sonnet-4-5', u, at).cost_usd).toBeCloseTo(0.8, 15)
  })

  it('a config override without cache_write_1h_mtok the same; with it, its own rate; a prefix too', () => {
    expect(new Pricer([{ model: 'claude-sonnet-4-5', ...list }]).price('anthropic', 'anthropic', 'claude-sonnet-4-5', u, at).cost_usd).toBeCloseTo(0.6, 15)
    expect(new Pricer([{ model: 'claude-sonnet-*', ...list }]).price('anthropic', 'anthropic', 'claude-sonnet-4-5', u, at).cost_usd).toBeCloseTo(0.6, 15)
    const own = new Pricer([{ model: 'claude-sonnet-4-5', ...list, cache_write_1h_mtok: 5 }])
    expect(own.price('anthropic', 'anthropic', 'claude-sonnet-4-5', u, at).cost_usd).toBeCloseTo(0.5, 15)
  })

  // 100k prompt tokens written to the cache for 5 minutes, and 100k read from it.
  const write5m = cached(100_000, 100_000, 0, 0)
  const read = { ...emptyUsage(), input_tokens: 100_000, cache_read_tokens: 100_000 }

  it("without cache rates (optional in the admin API and pricing.overrides): Anthropic's, 5-minute writes 1.25x input, 1-hour 2x, reads 0.1x", () => {
    const runtime = new Pricer()
    runtime.setRuntime([{ provider: 'anthropic', model: 'claude-sonnet-4-5', input_mtok: 3, output_mtok: 15 }])
    const override = new Pricer([{ model: 'claude-sonnet-4-5', input_mtok: 3, output_mtok: 15 }])
    for (const p of [runtime, override]) {
      // The library alone would price all three at the $3 input rate: $0.30 each.
      expect(p.price('anthropic', 'anthropic', 'claude-sonnet-4-5', u, at).cost_usd).toBeCloseTo(0.6, 15)
      expect(p.price('anthropic', 'anthropic', 'claude-sonnet-4-5', write5m, at).cost_usd).toBeCloseTo(0.375, 15)
      expect(p.price('anthropic', 'anthropic', 'claude-sonnet-4-5', read, at).cost_usd).toBeCloseTo(0.03, 15)
    }
  })

  it('keeps each cache rate given, and derives only the others', () => {
    const readOnly = new Pricer([{ model: 'claude-sonnet-4-5', input_mtok: 3, output_mtok: 15, cache_read_mtok: 0.5 }])
    expect(readOnly.price('anthropic', 'anthropic', 'claude-sonnet-4-5', read, at).cost_usd).toBeCloseTo(0.05, 15)
    expect(readOnly.price('anthropic', 'anthropic', 'claude-sonnet-4-5', write5m, at).cost_usd).toBeCloseTo(0.375, 15)
    const oneHourOnly = new Pricer([{ model: 'claude-sonnet-4-5', input_mtok: 3, output_mtok: 15, cache_write_1h_mtok: 5 }])
    expect(oneHourOnly.price('anthropic', 'anthropic', 'claude-sonnet-4-5', u, at).cost_usd).toBeCloseTo(0.5, 15)
    expect(oneHourOnly.price('anthropic', 'anthropic', 'claude-sonnet-4-5', write5m, at).cost_usd).toBeCloseTo(0.375, 15)
  })

  it("another vendor's model keeps what its price says (no 1-hour writes are Claude's alone)", () => {
    const p = new Pricer([{ model: 'my-finetune', input_mtok: 3, output_mtok: 15, cache_write_mtok: 3.75 }])
    expect(p.price('openai', 'openai', 'my-finetune', u, at).cost_usd).toBeCloseTo(0.375, 15)
    // No cache rates: the library's rule, cache writes and reads at the input price.
    const bare = new Pricer([{ model: 'my-finetune', input_mtok: 3, output_mtok: 15 }])
    expect(bare.price('openai', 'openai', 'my-finetune', write5m, at).cost_usd).toBeCloseTo(0.3, 15)
    expect(bare.price('openai', 'openai', 'my-finetune', read, at).cost_usd).toBeCloseTo(0.3, 15)
  })
})
