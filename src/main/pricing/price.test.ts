import { calcPrice, findProvider } from '@pydantic/genai-prices'
import { beforeAll, describe, expect, it } from 'vitest'
import { emptyUsage, type Usage } from '../metering/usage'
import { Pricer } from './price'
import { loadPriceLibrary } from './library'
import { withRequestFee } from './request-fees'

// The price library loads when first needed (./library.ts); the Pricer refuses to price before.
beforeAll(async () => {
  await loadPriceLibrary()
})

function usage(input: number, output: number, cacheRead = 0, cacheWrite = 0): Usage {
  return { ...emptyUsage(), input_tokens: input, output_tokens: output, cache_read_tokens: cacheRead, cache_write_tokens: cacheWrite }
}

/** What the library alone says, asked afresh (no remembered lookup). */
function direct(pricingId: string, model: string, u: Usage, at: Date): number | null {
  const lib: Record<string, number> = { input_tokens: u.input_tokens, output_tokens: u.output_tokens }
  if (u.cache_read_tokens) lib.cache_read_tokens = u.cache_read_tokens
  if (u.cache_write_tokens) lib.cache_write_tokens = u.cache_write_tokens
  try {
    return calcPrice(lib, model, { providerId: pricingId, timestamp: at })?.total_price ?? null
  } catch {
    return null // usage this model's price table cannot decompose
  }
}

// The Pricer remembers where the library found each model; every later price must still be
// exactly the library's own, whatever the usage, the date or the time of day.
describe('Pricer with remembered model lookups', () => {
  const cases: [string, string][] = [
    ['openai', 'gpt-4o-mini-2024-07-18'],
    ['openai', 'gpt-4o-mini'],
    ['openai', 'o3'], // its price changed on 2025-06-10
    ['anthropic', 'claude-3-5-sonnet-20240620'],
    ['anthropic', 'claude-sonnet-4-5-20250929'],
    ['deepseek', 'deepseek-chat'], // off-peak prices by time of day
    ['google', 'gemini-2.5-flash'],
  ]
  const times = ['2025-01-15T03:00:00Z', '2025-07-01T12:00:00Z', '2026-11-21T20:00:00Z', '2025-07-01T17:00:00Z'].map((t) => new Date(t))
  const usages = [usage(1149, 353, 1024), usage(506, 153), usage(1541, 29, 1111, 418), usage(3700, 741, 2560), usage(1, 0)]

  it('prices every call exactly as the library does, first call and later ones alike', () => {
    const pricer = new Pricer()
    for (let round = 0; round < 2; round++) {
      for (const [provider, model] of cases) {
        for (const at of times) {
          for (const u of usages) {
            const want = direct(provider, model, u, at)
            const got = pricer.price(provider, provider, model, u, at)
            expect(got, `${provider} ${model}`).toEqual(want === null ? { cost_usd: 0, priced: false } : { cost_usd: want, priced: true })
            if (u.cache_write_tokens === 0) expect(want, `${provider} ${model}`).not.toBeNull()
          }
        }
      }
    }
  })

  it('keeps the price that applied on the call date after a later-dated call was priced first', () => {
    const pricer = new Pricer()
    const u = usage(1_000_000, 1_000_000)
    const after = pricer.price('openai', 'openai', 'o3', u, new Date('2025-07-01T00:00:00Z'))
    const before = pricer.price('openai', 'openai', 'o3', u, new Date('2025-01-01T00:00:00Z'))
    expect(before.cost_usd).toBe(direct('openai', 'o3', u, new Date('2025-01-01T00:00:00Z')))
    expect(before.cost_usd).toBeGreaterThan(after.cost_usd)
  })

  it('finds models the provider prices through a fallback provider', () => {
    const pricer = new Pricer()
    const at = new Date('2026-01-01T00:00:00Z')
    const want = direct('google', 'claude-sonnet-4-5', usage(100, 10), at)
    expect(want).not.toBeNull()
    expect(pricer.price('google', 'google', 'claude-sonnet-4-5', usage(100, 10), at).cost_usd).toBe(want)
    expect(pricer.price('google', 'google', 'claude-sonnet-4-5', usage(7, 3), at).cost_usd).toBe(direct('google', 'claude-sonnet-4-5', usage(7, 3), at))
  })

  it('leaves an unknown model unpriced every time, and one provider’s model unknown to another', () => {
    const pricer = new Pricer()
    const at = new Date()
    for (let i = 0; i < 2; i++) {
      expect(pricer.price('openai', 'openai', 'no-such-model-xyz', usage(10, 10), at)).toEqual({ cost_usd: 0, priced: false })
    }
    expect(pricer.price('anthropic', 'anthropic', 'gpt-4o-mini', usage(10, 10), at).priced).toBe(direct('anthropic', 'gpt-4o-mini', usage(10, 10), at) !== null)
  })

  it('does not remember a model as unknown because one usage could not be priced', () => {
    const pricer = new Pricer()
    const at = new Date('2026-01-01T00:00:00Z')
    // More cached tokens than prompt tokens: the library cannot decompose it.
    expect(pricer.price('openai', 'openai', 'gpt-4o-mini', usage(10, 5, 50), at).priced).toBe(false)
    expect(pricer.price('openai', 'openai', 'gpt-4o-mini', usage(100, 5, 50), at)).toEqual({
      cost_usd: direct('openai', 'gpt-4o-mini', usage(100, 5, 50), at),
      priced: true,
    })
  })

  it('lets config overrides win over remembered library lookups', () => {
    const pricer = new Pricer([{ model: 'gpt-4o-mini*', provider: 'openai', input_mtok: 1, output_mtok: 2 }])
    const at = new Date('2026-01-01T00:00:00Z')
    for (let i = 0; i < 2; i++) {
      expect(pricer.price('openai', 'openai', 'gpt-4o-mini-2024-07-18', usage(1_000_000, 1_000_000), at).cost_usd).toBeCloseTo(3, 12)
    }
  })

  it('charges what the provider reported (usage.cost) over a runtime price, an override and the library', () => {
    const model = 'anthropic/claude-sonnet-4.5'
    const pricer = new Pricer([{ model, input_mtok: 1, output_mtok: 2 }])
    pricer.setRuntime([{ provider: 'openrouter', model, input_mtok: 3, output_mtok: 4 }])
    const at = new Date('2026-01-01T00:00:00Z')
    const reported = { ...usage(2000, 100), provider_cost_usd: 0.0123456 }
    expect(pricer.price('openrouter', 'openrouter', model, reported, at)).toEqual({ cost_usd: 0.0123456, priced: true })
    // Without a reported charge the runtime price applies: 2,000 x $3/M + 100 x $4/M.
    expect(pricer.price('openrouter', 'openrouter', model, usage(2000, 100), at).cost_usd).toBeCloseTo(0.0064, 15)
    // A charge of $0 (a free model) is a charge too.
    expect(pricer.price('openrouter', 'openrouter', model, { ...usage(2000, 100), provider_cost_usd: 0 }, at)).toEqual({ cost_usd: 0, priced: true })
  })

  it('prices a batch request at half of every token price, its web searches in full', () => {
    const pricer = new Pricer()
    const at = new Date('2026-01-01T00:00:00Z')
    const model = 'gpt-4o-mini-2024-07-18'
    const u = usage(1149, 353, 1024)
    const list = direct('openai', model, u, at)!
    expect(pricer.price('openai', 'openai', model, { ...u, batch: true }, at)).toEqual({ cost_usd: list / 2, priced: true })
    // Searches are charged per use at the list price (a run of the batch does not make them cheaper).
    const searched = { ...u, web_searches: 2 }
    const whole = pricer.price('openai', 'openai', model, searched, at).cost_usd
    const searches = whole - list
    expect(searches).toBeGreaterThan(0)
    expect(pricer.price('openai', 'openai', model, { ...searched, batch: true }, at).cost_usd).toBeCloseTo(list / 2 + searches, 15)
    // A model without a price stays unpriced; a charge the provider reported stays as reported.
    expect(pricer.price('openai', 'openai', 'no-such-model', { ...u, batch: true }, at)).toEqual({ cost_usd: 0, priced: false })
    expect(pricer.price('openai', 'openai', model, { ...u, batch: true, provider_cost_usd: 0.5 }, at)).toEqual({ cost_usd: 0.5, priced: true })
  })

  it('leaves a batch request whose batch rate is not known unpriced, whatever prices its model', () => {
    const pricer = new Pricer()
    const at = new Date('2026-01-01T00:00:00Z')
    // Groq lists llama-3.1-8b-instant; its batch discount is not known.
    const u = { ...usage(48, 2), batch: true, batch_rate_unknown: true }
    expect(direct('groq', 'llama-3.1-8b-instant', u, at)).toBeGreaterThan(0)
    expect(pricer.price('groq', 'groq', 'llama-3.1-8b-instant', u, at)).toEqual({ cost_usd: 0, priced: false })
    // A user's price is the model's list price, not its batch price: unpriced all the same.
    pricer.setRuntime([{ provider: 'groq', model: 'llama-3.1-8b-instant', input_mtok: 1, output_mtok: 1 }])
    expect(pricer.price('groq', 'groq', 'llama-3.1-8b-instant', u, at)).toEqual({ cost_usd: 0, priced: false })
    // The same request with its rate known is priced at half.
    pricer.setRuntime([])
    expect(pricer.price('groq', 'groq', 'llama-3.1-8b-instant', { ...u, batch_rate_unknown: undefined }, at)).toEqual({ cost_usd: direct('groq', 'llama-3.1-8b-instant', u, at)! / 2, priced: true })
  })

  it('prices a call billed with the data-residency premium at 1.1x every token price, its web searches in full, as Claude Code computes it', () => {
    const pricer = new Pricer()
    const at = new Date('2026-11-01T00:00:00Z')
    const model = 'claude-opus-4-6'
    const u = { ...usage(12_000, 800, 9_000, 2_000), cache_write_1h_tokens: 500 }
    const lib = (x: Usage) => {
      const r: Record<string, number> = { input_tokens: x.input_tokens, output_tokens: x.output_tokens, cache_read_tokens: x.cache_read_tokens, cache_write_tokens: x.cache_write_tokens, cache_write_1h_tokens: x.cache_write_1h_tokens }
      if (x.web_searches) r.web_searches = x.web_searches
      return calcPrice(r, model, { providerId: 'anthropic', timestamp: at })!.total_price
    }
    const list = lib(u)
    expect(pricer.price('anthropic', 'anthropic', model, { ...u, data_residency: true }, at)).toEqual({ cost_usd: list * 1.1, priced: true })
    const searched = { ...u, web_searches: 3 }
    const searches = lib(searched) - list
    expect(searches).toBeCloseTo(0.03, 12)
    expect(pricer.price('anthropic', 'anthropic', model, { ...searched, data_residency: true }, at).cost_usd).toBeCloseTo(list * 1.1 + searches, 15)
    // A batch request in the US only: half, then the premium.
    expect(pricer.price('anthropic', 'anthropic', model, { ...u, batch: true, data_residency: true }, at).cost_usd).toBe((list / 2) * 1.1)
    // A price set by the user is raised the same way; a reported charge and an unknown model are left as they are.
    const custom = new Pricer([{ model: 'my-claude', input_mtok: 10, output_mtok: 20 }])
    expect(custom.price('anthropic', 'anthropic', 'my-claude', { ...usage(1_000_000, 1_000_000), data_residency: true }, at).cost_usd).toBeCloseTo(33, 12)
    expect(pricer.price('anthropic', 'anthropic', model, { ...u, data_residency: true, provider_cost_usd: 0.25 }, at)).toEqual({ cost_usd: 0.25, priced: true })
    expect(pricer.price('anthropic', 'anthropic', 'no-such-model', { ...u, data_residency: true }, at)).toEqual({ cost_usd: 0, priced: false })
  })

  it("prices a call a fast tier served at an override with speed: fast for its model; without one, at OpenAI's Priority price or Anthropic's fast-mode price, else at the standard price", () => {
    const at = new Date('2026-11-01T00:00:00Z')
    const model = 'claude-opus-4-6'
    const u = usage(1_000_000, 1_000_000)
    const fast = { ...u, fast: true }
    const standard = direct('anthropic', model, u, at)!
    const pricer = new Pricer([
      { model: 'claude-opus-4-6', provider: 'anthropic', speed: 'fast', input_mtok: 30, output_mtok: 150 },
      { model: 'gpt-5*', speed: 'fast', input_mtok: 2.5, output_mtok: 20 },
      { model: 'gpt-5-mini', input_mtok: 1, output_mtok: 2 },
    ])
    expect(pricer.price('anthropic', 'anthropic', model, fast, at)).toEqual({ cost_usd: 180, priced: true })
    // The fast price is for the calls a fast tier served only; and only for its provider.
    expect(pricer.price('anthropic', 'anthropic', model, u, at)).toEqual({ cost_usd: standard, priced: true })
    expect(pricer.price('anthropic', 'vertex', model, fast, at).cost_usd).toBe(standard)
    // A prefix, as for any override; a fast call of a model with no fast price takes the usual chain.
    expect(pricer.price('openai', 'openai', 'gpt-5-2025-08-07', fast, at).cost_usd).toBeCloseTo(22.5, 12)
    expect(pricer.price('openai', 'openai', 'gpt-5-mini', { ...u, fast: true }, at).cost_usd).toBeCloseTo(22.5, 12)
    // No fast override: OpenAI's published Priority price (./priority-prices.ts), where there is one.
    expect(pricer.price('openai', 'openai', 'gpt-4o', { ...u, fast: true }, at).cost_usd).toBeCloseTo(4.25 + 17, 12)
    expect(pricer.price('openai', 'openai', 'o3-mini', { ...u, fast: true }, at).cost_usd).toBe(direct('openai', 'o3-mini', u, at))
    // No fast override: Anthropic's published fast-mode price (./anthropic-fast.ts), 6x for Opus 4.6; the Claude
    // API's and Microsoft Foundry's (billed at Anthropic's rates).
    expect(new Pricer().price('anthropic', 'anthropic', model, fast, at).cost_usd).toBeCloseTo(standard * 6, 12)
    expect(new Pricer().price('anthropic', 'foundry', model, fast, at).cost_usd).toBeCloseTo(standard * 6, 12)
    // An override with speed: fast still wins over the carried fast-mode price.
    expect(new Pricer([{ model, speed: 'fast', input_mtok: 1, output_mtok: 1 }]).price('anthropic', 'anthropic', model, fast, at)).toEqual({ cost_usd: 2, priced: true })
  })
})

describe('Pricer with a Perplexity search context size', () => {
  const at = new Date('2026-11-21T12:00:00Z')
  /** The library's price of the usage with the model's request fee set to `fee` per 1,000 (the data's table otherwise). */
  function atFee(model: string, u: Usage, fee: number): number {
    const data = findProvider({ providerId: 'perplexity' })!
    const m = data.models.find((x) => x.id === model)!
    const table = { ...m, prices: { ...(m.prices as Record<string, number>), requests_kcount: fee } }
    return calcPrice({ input_tokens: u.input_tokens, output_tokens: u.output_tokens }, model, { provider: { ...data, models: [table] }, timestamp: at })!.total_price
  }

  it('charges the request fee of the size the call ran with, first call and later ones alike; none: the data\'s (the high one)', () => {
    const p = new Pricer()
    for (const [model, fees] of [['sonar', [5, 8, 12]], ['sonar-pro', [6, 10, 14]], ['sonar-reasoning-pro', [6, 10, 14]]] as const) {
      const u = usage(1200, 300)
      expect(p.price('perplexity', 'perplexity', model, { ...u, search_context_size: 'low' }, at).cost_usd).toBe(atFee(model, u, fees[0]))
      expect(p.price('perplexity', 'perplexity', model, { ...u, search_context_size: 'medium' }, at).cost_usd).toBe(atFee(model, u, fees[1]))
      expect(p.price('perplexity', 'perplexity', model, { ...u, search_context_size: 'high' }, at).cost_usd).toBe(atFee(model, u, fees[2]))
      expect(p.price('perplexity', 'perplexity', model, u, at).cost_usd).toBe(direct('perplexity', model, u, at))
      expect(p.price('perplexity', 'perplexity', model, { ...u, search_context_size: 'low' }, at).cost_usd).toBe(atFee(model, u, fees[0]))
    }
  })

  it('a Pro Search call (Sonar Pro) is charged Pro Search\'s fee of its size, $14/$18/$22; a model without Pro Search fees its own', () => {
    const p = new Pricer()
    const u = usage(1200, 300)
    for (const [size, fee] of [['low', 14], ['medium', 18], ['high', 22]] as const) {
      expect(p.price('perplexity', 'perplexity', 'sonar-pro', { ...u, search_context_size: size, pro_search: true }, at).cost_usd).toBe(atFee('sonar-pro', u, fee))
    }
    // The same size without Pro Search is still the standard fee (each is made once, apart).
    expect(p.price('perplexity', 'perplexity', 'sonar-pro', { ...u, search_context_size: 'medium' }, at).cost_usd).toBe(atFee('sonar-pro', u, 10))
    expect(p.price('perplexity', 'perplexity', 'sonar', { ...u, search_context_size: 'low', pro_search: true }, at).cost_usd).toBe(atFee('sonar', u, 5))
    expect(p.price('perplexity', 'perplexity', 'sonar-pro', { ...u, search_context_size: 'low', pro_search: true, provider_cost_usd: 0.015 }, at).cost_usd).toBe(0.015)
  })

  it('changes nothing for a model without a request fee, nor another provider\'s model, nor a reported charge', () => {
    const p = new Pricer()
    const u = usage(1200, 300)
    expect(p.price('perplexity', 'perplexity', 'sonar-deep-research', { ...u, search_context_size: 'low' }, at).cost_usd).toBe(direct('perplexity', 'sonar-deep-research', u, at))
    expect(p.price('openai', 'openai', 'gpt-4o-mini', { ...u, search_context_size: 'low' }, at).cost_usd).toBe(direct('openai', 'gpt-4o-mini', u, at))
    expect(p.price('perplexity', 'perplexity', 'sonar', { ...u, search_context_size: 'low', provider_cost_usd: 0.0135 }, at).cost_usd).toBe(0.0135)
  })

  it('leaves a model whose data fee is not the high one of its sizes at the data\'s fee (the data knows a newer fee)', () => {
    const m = { id: 'sonar', match: { equals: 'sonar' }, prices: { input_mtok: 1, output_mtok: 1, requests_kcount: 15 } }
    expect(withRequestFee('perplexity', m, 'low')).toBe(m)
    expect(withRequestFee('perplexity', { ...m, prices: { ...m.prices, requests_kcount: 12 } }, 'low').prices).toEqual({ input_mtok: 1, output_mtok: 1, requests_kcount: 5 })
    expect(withRequestFee('other', { ...m, prices: { ...m.prices, requests_kcount: 12 } }, 'low').prices).toEqual({ input_mtok: 1, output_mtok: 1, requests_kcount: 12 })
  })
})

describe('Pricer with a modality split', () => {
  const at = new Date('2026-11-21T20:00:00Z')

  it('gives a cache hit beside audio no cached audio when the meter named none (the library requires the count)', () => {
    const u: Usage = { ...usage(6_000, 100, 800), extra: { input_audio_tokens: 5_000 } }
    const warned: string[] = []
    const got = new Pricer([], (m) => warned.push(m)).price('google', 'gemini', 'gemini-2.5-flash', u, at)
    const want = calcPrice({ input_tokens: 6_000, output_tokens: 100, cache_read_tokens: 800, input_audio_tokens: 5_000, cache_audio_read_tokens: 0 }, 'gemini-2.5-flash', { providerId: 'google', timestamp: at })!
    expect(got).toEqual({ cost_usd: want.total_price, priced: true })
    expect(got.cost_usd).toBeGreaterThan(direct('google', 'gemini-2.5-flash', u, at)! * 2)
    expect(warned).toEqual([])
  })

  it('prices a split the library refuses at the base token rates, and says so once per model', () => {
    // More audio than the whole prompt: the library cannot decompose it.
    const u: Usage = { ...usage(1_000, 100), extra: { input_audio_tokens: 5_000 } }
    const warned: string[] = []
    const pricer = new Pricer([], (m) => warned.push(m))
    for (let i = 0; i < 3; i++) expect(pricer.price('google', 'gemini', 'gemini-2.5-flash', u, at)).toEqual({ cost_usd: direct('google', 'gemini-2.5-flash', u, at), priced: true })
    expect(warned).toHaveLength(1)
    expect(warned[0]).toContain('google gemini-2.5-flash')
    expect(warned[0]).toContain('input_audio_tokens')
    // An unknown model is unpriced, not a refused split.
    expect(pricer.price('google', 'gemini', 'gemini-no-such-model', u, at)).toEqual({ cost_usd: 0, priced: false })
    expect(warned).toHaveLength(1)
  })
})
