import type Database from 'better-sqlite3'
import type { Config } from '../config/schema'
import { Pricer } from './price'
import { PriceStore } from './store'
import { PriceUpdater } from './update'

/**
 * A Pricer for work done outside a running server on the data folder (`burnrate import`, the
 * reports' log sync), pricing as a server there would: the config's overrides, the runtime
 * prices the admin API stored in the file (with `storage.url`, the last copy read from
 * PostgreSQL), and the newer price data the server cached in the folder (`prices.json`), applied
 * before the first price. It fetches nothing.
 */
export function localPricer(config: Config, db: Database.Database): Pricer {
  const pricer = new Pricer(config.pricing.overrides, undefined, config.pricing.google_search_grounding)
  new PriceStore(db, (prices) => pricer.setRuntime(prices))
  const updater = new PriceUpdater({ dataDir: config.data_dir, url: config.pricing.update_url, autoUpdate: false, onChange: () => pricer.dataChanged() })
  pricer.prepareWith(() => updater.prepare())
  return pricer
}
