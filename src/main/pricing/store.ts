import type Database from 'better-sqlite3'
import type { StoredPrice } from '../../shared/api'
import type { RuntimePrice } from './price'

/** The admin API's view of the runtime prices: this file's SQLite store, or ./shared-prices.ts on PostgreSQL. */
export interface PriceWriter {
  all(): StoredPrice[] | Promise<StoredPrice[]>
  put(p: RuntimePrice, now?: number): { price: StoredPrice; created: boolean } | Promise<{ price: StoredPrice; created: boolean }>
  delete(provider: string, model: string): boolean | Promise<boolean>
  /** Shared prices (PostgreSQL): loads what another instance changed, now; absent where this process holds them all. */
  refresh?(): Promise<unknown>
}

export interface Row {
  provider: string
  model: string
  input_mtok: number
  output_mtok: number
  cache_read_mtok: number | null
  cache_write_mtok: number | null
  updated_at: number
}

export function toStored(r: Row): StoredPrice {
  return { ...r, updated_at: new Date(r.updated_at).toISOString() }
}

/**
 * Runtime prices (PUT/DELETE /api/admin/prices/{provider}/{model}) in the `price_overrides`
 * table, the single source of truth: every write commits, then `onChange` gets every price read
 * back, so the very next call is priced with it.
 */
export class PriceStore implements PriceWriter {
  private readonly selectAll: Database.Statement
  private readonly selectOne: Database.Statement
  private readonly upsert: Database.Statement
  private readonly remove: Database.Statement

  constructor(
    private readonly db: Database.Database,
    private readonly onChange: (prices: RuntimePrice[]) => void,
  ) {
    this.selectAll = db.prepare('SELECT * FROM price_overrides ORDER BY provider, model')
    this.selectOne = db.prepare('SELECT * FROM price_overrides WHERE provider = ? AND model = ?')
    this.upsert = db.prepare(`
      INSERT INTO price_overrides (provider, model, input_mtok, output_mtok, cache_read_mtok, cache_write_mtok, updated_at)
      VALUES (@provider, @model, @input_mtok, @output_mtok, @cache_read_mtok, @cache_write_mtok, @updated_at)
      ON CONFLICT (provider, model) DO UPDATE SET
        input_mtok = excluded.input_mtok, output_mtok = excluded.output_mtok, cache_read_mtok = excluded.cache_read_mtok,
        cache_write_mtok = excluded.cache_write_mtok, updated_at = excluded.updated_at`)
    this.remove = db.prepare('DELETE FROM price_overrides WHERE provider = ? AND model = ?')
    this.onChange(this.all())
  }

  all(): StoredPrice[] {
    return (this.selectAll.all() as Row[]).map(toStored)
  }

  get(provider: string, model: string): StoredPrice | null {
    const r = this.selectOne.get(provider, model) as Row | undefined
    return r ? toStored(r) : null
  }

  /** Stores the price (replacing one for the same model); returns it and whether it is new. */
  put(p: RuntimePrice, now = Date.now()): { price: StoredPrice; created: boolean } {
    const created = this.get(p.provider, p.model) === null
    this.upsert.run({
      provider: p.provider,
      model: p.model,
      input_mtok: p.input_mtok,
      output_mtok: p.output_mtok,
      cache_read_mtok: p.cache_read_mtok ?? null,
      cache_write_mtok: p.cache_write_mtok ?? null,
      updated_at: now,
    })
    this.onChange(this.all())
    return { price: this.get(p.provider, p.model)!, created }
  }

  delete(provider: string, model: string): boolean {
    const n = this.remove.run(provider, model).changes
    if (n > 0) this.onChange(this.all())
    return n > 0
  }

  /** Replaces every row with `prices` in one transaction (PostgreSQL mode's last-known copy); no `onChange`. */
  replaceAll(prices: StoredPrice[]): void {
    this.db.transaction(() => {
      this.db.prepare('DELETE FROM price_overrides').run()
      for (const p of prices) this.upsert.run({ ...p, updated_at: Date.parse(p.updated_at) })
    })()
  }
}
