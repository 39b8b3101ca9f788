import type * as Library from '@pydantic/genai-prices'
import { loadOnce } from '../server/load-once'
import { holdAgain } from '../server/startup-tiering'

/**
 * @pydantic/genai-prices, loaded when first needed rather than at start-up: evaluating its module
 * reads and parses its price table (500 KB of JSON) and builds its unit registry, about 25 ms of
 * a slow machine's start-up, which the server does not need to answer. The server loads it a
 * moment after it listens (with express: ../server/api-app.ts) or for the first call that comes
 * sooner; every path that prices waits for it first (its Pricer's `ready()`, ./price.ts), and
 * `priceLibrary()` refuses to answer before then rather than price anything without it.
 */
export type PriceLibrary = typeof Library

/**
 * Where the library's maintainers publish its newer price data (the library's own
 * `REMOTE_DATA_JSON_URL`, which test/pricing/library.test.ts checks this equals), known without
 * loading the library.
 */
export const PRICE_DATA_URL = 'https://raw.githubusercontent.com/pydantic/genai-prices/main/prices/new_data/v2/data.json'

let lib: PriceLibrary | null = null
let loaded!: (l: PriceLibrary) => void
const whenLoaded = new Promise<PriceLibrary>((resolve) => {
  loaded = resolve
})

/** Loads the library (once; a failed load is tried again by the next caller). */
export const loadPriceLibrary: () => Promise<PriceLibrary> = loadOnce(() => {
  // Held as start-up held it (../server/startup-tiering.ts): its loading is start-up's work, done later.
  const resume = holdAgain()
  return import('@pydantic/genai-prices')
    .then((m) => {
      lib = m as PriceLibrary
      loaded(lib)
      return lib
    })
    .finally(resume)
})

/** Resolves once something has loaded the library (without loading it): for work that can wait for the first price. */
export function whenPriceLibraryLoaded(): Promise<PriceLibrary> {
  return whenLoaded
}

/** Whether the library is loaded (then `priceLibrary()` answers). */
export function priceLibraryLoaded(): boolean {
  return lib !== null
}

/** The loaded library; throws if it is not loaded yet (a path that prices awaits its Pricer's `ready()` first). */
export function priceLibrary(): PriceLibrary {
  if (lib) return lib
  throw new Error("the price library is not loaded yet (await the Pricer's ready() before pricing)")
}

/**
 * The library's price of usage `u` for `model` in `provider` at `at` (its model and the price set
 * it chose, for a dated table the one of `at`); null when it finds no price or cannot price it.
 */
export function appliedPrice(u: Record<string, number>, model: string, provider: Library.Provider, at: Date): ReturnType<PriceLibrary['calcPrice']> {
  try {
    return priceLibrary().calcPrice(u, model, { provider, timestamp: at })
  } catch {
    return null
  }
}
