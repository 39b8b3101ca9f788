import type { Feature, ServerContext } from '../server/context'
import { firstLoad } from '../storage/shared-table'
import { PgPriceStore } from './shared-prices'
import { PriceStore, type PriceWriter } from './store'
import type { Prices } from './types'
import { PriceUpdater } from './update'

export type { Prices } from './types'

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
  // SQLite: the data folder's `price_overrides` is the truth. PostgreSQL (`storage.url`): the
  // database's is, shared by every instance; the local table keeps the last prices read from it, so
  // an instance starting while the database is away prices with those (start-up never waits on it).
  const local = new PriceStore(ctx.db, (prices) => ctx.pricer.setRuntime(prices))
  let store: PriceWriter = local
  if (ctx.store.dialect === 'postgres') {
    const shared = new PgPriceStore(ctx.store, (prices) => {
      ctx.pricer.setRuntime(prices)
      try {
        local.replaceAll(prices)
      } catch {
        // the copy is a convenience; the prices in force are the ones just read
      }
    })
    let closed = false
    ctx.onClose(() => {
      closed = true
      shared.close()
    })
    void firstLoad(shared, () => closed)
    store = shared
  }
  const updater = new PriceUpdater({
    dataDir: ctx.config.data_dir,
    url: ctx.config.pricing.update_url,
    // BURNRATE_PRICE_AUTO_UPDATE=false keeps a whole environment offline (the test suite, air-gapped CI).
    autoUpdate: ctx.config.pricing.auto_update && process.env.BURNRATE_PRICE_AUTO_UPDATE !== 'false',
    onChange: () => ctx.pricer.dataChanged(),
    log: ctx.log,
    egress: ctx.egress,
  })
  // The server's calls are priced once the cached newer data (if any) is applied, never before.
  ctx.pricer.prepareWith(() => updater.prepare())
  updater.start()
  ctx.onClose(() => updater.close())
  ctx.prices = { store, updater }
  return ctx.prices
}
