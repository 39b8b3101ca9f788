import { type Provider, waitForUpdate } from '@pydantic/genai-prices'
import { describe, expect, it } from 'vitest'
import { keepKnown } from './keep-known'
import { loadPriceLibrary } from './library'

// keepKnown looks up, through the download's lists, each model the data in use prices that the
// download lacks: openrouter's list is 700 models, copied by the library on each lookup. It runs
// on the proxy's event loop during an update (and on a first call's way at start).

describe('keeping the prices a download lacks', () => {
  it('lets calls through while it looks the missing models up', async () => {
    const bundled = JSON.parse(JSON.stringify(await waitForUpdate())) as Provider[]
    const lib = await loadPriceLibrary()
    // As a download may be applied: each provider lacking as many models as it may lose, max(3, 10%).
    const next = bundled.map((p) => {
      const lose = Math.max(3, Math.floor(p.models.length * 0.1))
      return { ...p, models: p.models.filter((_, i) => i % Math.max(1, Math.floor(p.models.length / lose)) !== 0) }
    })
    let done = false
    let turns = 0
    const turn = (): void => {
      if (done) return
      turns++
      setImmediate(turn)
    }
    setImmediate(turn)
    const known = await keepKnown(lib, next, bundled, bundled)
    done = true
    expect(known.kept.length).toBeGreaterThan(100)
    // The event loop went round while it ran: each lookup of a provider's whole list blocked it at once before.
    expect(turns).toBeGreaterThan(0)
  })
})

describe('keeping the entry a download renamed a model to', () => {
  it('keeps the entries in the order the data in use lists them: a name two of them take is priced as it was', async () => {
    const bundled = JSON.parse(JSON.stringify(await waitForUpdate())) as Provider[]
    const lib = await loadPriceLibrary()
    const ids = bundled.find((p) => p.id === 'anthropic')!.models.map((m) => m.id)
    // A model the bundled data lists after claude-sonnet-5, priced in use by its own entry, listed before the renamed one.
    const other = ids[ids.indexOf('claude-sonnet-5') + 1]!
    const renamed = { id: 'claude-sonnet-5-0', match: { or: [{ equals: 'claude-sonnet-5' }, { equals: other }] }, prices: { input_mtok: 1, output_mtok: 5 } }
    const anthropic = (data: Provider[], change: (models: any[]) => any[]): Provider[] => data.map((p) => (p.id === 'anthropic' ? { ...p, models: change(p.models) } : p))
    const inUse = anthropic(bundled, (models) => [...models.filter((m) => m.id !== 'claude-sonnet-5'), renamed])
    const next = anthropic(bundled, (models) => models.filter((m) => m.id !== 'claude-sonnet-5' && m.id !== other))
    const price = (data: Provider[], model: string): number | undefined =>
      lib.calcPrice({ input_tokens: 1_000_000, output_tokens: 0 }, model, { provider: data.find((p) => p.id === 'anthropic')! })?.total_price
    const known = await keepKnown(lib, next, inUse, bundled)
    expect(known.kept).toEqual([`anthropic ${other}`, 'anthropic claude-sonnet-5-0'])
    // The price each had in use: the renamed entry's $1 for claude-sonnet-5 (the bundled $2 before), its own for the other.
    expect(price(known.data, 'claude-sonnet-5')).toBe(1)
    expect(price(known.data, other)).toBe(price(inUse, other))
  })
})
