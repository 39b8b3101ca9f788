import type { Feature, ServerContext } from '../server/context'
import { PriceStore } from './store'
import { PriceUpdater } from './update'

/** The server's runtime prices and price-data updater (ctx.prices). */
export interface Prices {
  store: PriceStore
  updater: PriceUpdater
}

/**
 * Prices that stay current: runtime prices from the admin API (persisted, applied to the next
 * call) and the library's data kept up to date in the background (./update.ts).
 */
export const pricing: Feature = (ctx) => {
  ctx.prices = pricesOf(ctx)
}

/** Installs the price store and updater on first use. */
export function pricesOf(ctx: ServerContext): Prices {
  if (ctx.prices) return ctx.prices
  const store = new PriceStore(ctx.db, (prices) => ctx.pricer.setRuntime(prices))
  const updater = new PriceUpdater({
    dataDir: ctx.config.data_dir,
    url: ctx.config.pricing.update_url,
    // BURNRATE_PRICE_AUTO_UPDATE=false keeps a whole environment offline (the test suite, air-gapped CI).
    autoUpdate: ctx.config.pricing.auto_update && process.env.BURNRATE_PRICE_AUTO_UPDATE !== 'false',
    onChange: () => ctx.pricer.dataChanged(),
    log: ctx.log,
  })
  updater.start()
  ctx.onClose(() => updater.close())
  ctx.prices = { store, updater }
  return ctx.prices
}
