import type { StoredPrice } from '../../shared/api'
import { SharedTable } from '../storage/shared-table'
import type { SqlStore } from '../storage/sql'
import type { RuntimePrice } from './price'
import { type PriceWriter, type Row, toStored } from './store'

/**
 * Runtime prices in PostgreSQL's `price_overrides`, shared by every instance on the database
 * (versioned in `price_overrides_version`; see SharedTable, as budget rules are): a price set or
 * deleted through any instance prices the calls of all of them within about a second.
 */
export class PgPriceStore extends SharedTable<StoredPrice> implements PriceWriter {
  constructor(store: SqlStore, onChange: (prices: StoredPrice[]) => void) {
    super(store, 'price_overrides_version', onChange)
  }

  protected async read(): Promise<StoredPrice[]> {
    return (await this.store.all<Row>('SELECT * FROM price_overrides ORDER BY provider, model')).map(toStored)
  }

  put(p: RuntimePrice, now = Date.now()): Promise<{ price: StoredPrice; created: boolean }> {
    const key = { provider: p.provider, model: p.model }
    return this.write(async (tx) => {
      const existed = (await tx.get('SELECT 1 AS x FROM price_overrides WHERE provider = @provider AND model = @model', key)) !== undefined
      await tx.run(
        `INSERT INTO price_overrides (provider, model, input_mtok, output_mtok, cache_read_mtok, cache_write_mtok, updated_at)
         VALUES (@provider, @model, @input_mtok, @output_mtok, @cache_read_mtok, @cache_write_mtok, @updated_at)
         ON CONFLICT (provider, model) DO UPDATE SET
           input_mtok = excluded.input_mtok, output_mtok = excluded.output_mtok, cache_read_mtok = excluded.cache_read_mtok,
           cache_write_mtok = excluded.cache_write_mtok, updated_at = excluded.updated_at`,
        {
          ...key,
          input_mtok: p.input_mtok,
          output_mtok: p.output_mtok,
          cache_read_mtok: p.cache_read_mtok ?? null,
          cache_write_mtok: p.cache_write_mtok ?? null,
          updated_at: now,
        },
      )
      const row = await tx.get<Row>('SELECT * FROM price_overrides WHERE provider = @provider AND model = @model', key)
      return { result: { price: toStored(row!), created: !existed }, changed: true }
    })
  }

  delete(provider: string, model: string): Promise<boolean> {
    return this.write(async (tx) => {
      const n = await tx.run('DELETE FROM price_overrides WHERE provider = @provider AND model = @model', { provider, model })
      return { result: n > 0, changed: n > 0 }
    })
  }
}
