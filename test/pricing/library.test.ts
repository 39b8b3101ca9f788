import { REMOTE_DATA_JSON_URL, calcPrice } from '@pydantic/genai-prices'
import { describe, expect, it } from 'vitest'
import { emptyUsage } from '../../src/main/metering/usage'
import { PRICE_DATA_URL, loadPriceLibrary, priceLibrary, priceLibraryLoaded } from '../../src/main/pricing/library'
import { Pricer } from '../../src/main/pricing/price'

// The price library loads after start-up (src/main/pricing/library.ts). Nothing may price
// without it: a price asked for before it is loaded is an error, never a call left unpriced.

describe('the price library, loaded when first needed', () => {
  it('the address of its published data is known without loading it, and is the library\'s own', () => {
    expect(PRICE_DATA_URL).toBe(REMOTE_DATA_JSON_URL)
  })

  it('refuses to price before it is loaded, then prices exactly as the library does', async () => {
    const usage = { ...emptyUsage(), input_tokens: 1_149, output_tokens: 300 }
    const pricer = new Pricer()
    expect(priceLibraryLoaded()).toBe(false)
    expect(() => priceLibrary()).toThrow(/not loaded yet/)
    expect(() => pricer.price('openai', 'openai', 'gpt-4o-mini', usage, new Date())).toThrow(/not loaded yet/)
    // An override too: it is applied by the library's own code.
    const withOverride = new Pricer([{ model: 'my-model', input_mtok: 1, output_mtok: 2 }])
    expect(() => withOverride.price('openai', 'openai', 'my-model', usage, new Date())).toThrow(/not loaded yet/)

    const [a, b] = await Promise.all([loadPriceLibrary(), loadPriceLibrary()])
    expect(a).toBe(b)
    expect(priceLibraryLoaded()).toBe(true)
    const expected = calcPrice({ input_tokens: 1_149, output_tokens: 300 }, 'gpt-4o-mini', { providerId: 'openai' })!.total_price
    expect(pricer.price('openai', 'openai', 'gpt-4o-mini', usage, new Date())).toEqual({ cost_usd: expected, priced: true })
    const overridden = withOverride.price('openai', 'openai', 'my-model', usage, new Date())
    expect(overridden.priced).toBe(true)
    expect(overridden.cost_usd).toBeCloseTo((1_149 * 1 + 300 * 2) / 1e6, 12)
  })
})
