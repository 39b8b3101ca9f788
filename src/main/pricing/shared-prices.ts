import type { StoredPrice } from '../../shared/api'
import { migratePostgres } from '../storage/postgres-migrations'
import type { SqlStore } from '../storage/sql'
import type { RuntimePrice } from './price'
import { type PriceWriter, type Row, toStored } from './store'

/** How often an instance looks for price changes made by the others (README: Team server on PostgreSQL). */
export const PRICES_POLL_MS = 1000

/**
 * Runtime prices in PostgreSQL's `price_overrides`, shared by every instance on the database.
 * Every write bumps `price_overrides_version` in the same transaction; each instance polls that
 * one row every second and reloads the prices when it moved, so a price set or deleted through
 * any instance prices the calls of all of them within about a second. The instance that wrote
 * reloads before its admin call answers, so its own next call is already priced with it.
 * (The same pattern as budget rules: ../budgets/shared-rules.ts.)
 */
export class PgPriceStore implements PriceWriter {
  private version = -1
  private timer: NodeJS.Timeout | null = null
  private polling: Promise<boolean> | null = null
  private schema: Promise<unknown> | null = null

  constructor(
    private readonly store: SqlStore,
    private readonly onChange: (prices: StoredPrice[]) => void,
    private readonly migrate: (store: SqlStore) => Promise<unknown> = migratePostgres,
  ) {}

  /**
   * The schema, once: an admin write right after start-up on a new database must not wait for
   * the ledger's first flush to create the tables (migrations take an advisory lock, so running
   * alongside the ledger's is safe). Tried again after a failure.
   */
  private ready(): Promise<unknown> {
    this.schema ??= this.migrate(this.store).catch((err: unknown) => {
      this.schema = null
      throw err
    })
    return this.schema
  }

  async all(): Promise<StoredPrice[]> {
    await this.ready()
    return (await this.store.all<Row>('SELECT * FROM price_overrides ORDER BY provider, model')).map(toStored)
  }

  /** Loads the prices when another instance changed them (or on the first call); true when it did. */
  refresh(): Promise<boolean> {
    // One look at a time; a caller during a look waits for it.
    this.polling ??= this.look().finally(() => {
      this.polling = null
    })
    return this.polling
  }

  private async look(): Promise<boolean> {
    await this.ready()
    const row = await this.store.get<{ version: number }>('SELECT version FROM price_overrides_version WHERE one = 1')
    const v = row?.version ?? 0
    if (v === this.version) return false
    const prices = await this.all()
    this.version = v
    this.onChange(prices)
    return true
  }

  /** Polls every `pollMs` until `close`. */
  start(pollMs = PRICES_POLL_MS): void {
    if (this.timer) return
    this.timer = setInterval(() => {
      this.refresh().catch(() => {
        // the database is away: the prices in force stay, the next poll tries again
      })
    }, pollMs)
    this.timer.unref()
  }

  async put(p: RuntimePrice, now = Date.now()): Promise<{ price: StoredPrice; created: boolean }> {
    const key = { provider: p.provider, model: p.model }
    await this.ready()
    const out = await this.store.transaction(async (tx) => {
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
      await tx.run('UPDATE price_overrides_version SET version = version + 1 WHERE one = 1')
      const row = await tx.get<Row>('SELECT * FROM price_overrides WHERE provider = @provider AND model = @model', key)
      return { price: toStored(row!), created: !existed }
    })
    await this.reloadNow()
    return out
  }

  async delete(provider: string, model: string): Promise<boolean> {
    await this.ready()
    const deleted = await this.store.transaction(async (tx) => {
      const n = await tx.run('DELETE FROM price_overrides WHERE provider = @provider AND model = @model', { provider, model })
      if (n > 0) await tx.run('UPDATE price_overrides_version SET version = version + 1 WHERE one = 1')
      return n > 0
    })
    if (deleted) await this.reloadNow()
    return deleted
  }

  /** Reloads after this instance's own write (a look already under way may predate it). */
  private async reloadNow(): Promise<void> {
    if (this.polling) await this.polling.catch(() => false)
    await this.refresh()
  }

  close(): void {
    if (this.timer) clearInterval(this.timer)
    this.timer = null
  }
}

/** Reads the shared prices until it succeeds (the database may be starting too), then polls them. */
export async function firstLoad(prices: PgPriceStore, closed: () => boolean): Promise<void> {
  while (!closed()) {
    try {
      await prices.refresh()
      break
    } catch {
      await new Promise((r) => setTimeout(r, 1000).unref())
    }
  }
  if (!closed()) prices.start()
}
