import type { PriceWriter } from './store'
import type { PriceUpdater } from './update'

/** The server's runtime prices and price-data updater (ctx.prices). */
export interface Prices {
  store: PriceWriter
  updater: PriceUpdater
}
