import { ensurePostgresSchema } from './postgres-migrations'
import type { SqlStore } from './sql'

/** How often an instance looks for changes the others made to a shared table (rules, prices). */
export const SHARED_POLL_MS = 1000

/**
 * A small table in PostgreSQL shared by every instance on the database (runtime budget rules,
 * runtime prices), with a one-row version table beside it. Every write bumps the version in the
 * same transaction; each instance polls that one row every second and reloads the table when it
 * moved, so a change made through any instance is in force on all of them within about a second.
 * The instance that wrote reloads before its admin call answers, so its own next call already
 * sees the change. The schema is made sure of before the first read or write, so an admin write
 * right after the first start on a new database does not wait for the ledger's first flush.
 */
export abstract class SharedTable<T> {
  private version = -1
  private timer: NodeJS.Timeout | null = null
  private polling: Promise<boolean> | null = null

  constructor(
    protected readonly store: SqlStore,
    /** The one-row table (`one = 1`, `version`) every write bumps. */
    private readonly versionTable: string,
    private readonly onChange: (rows: T[]) => void,
  ) {}

  /** Every row, as the table holds it now. */
  async all(): Promise<T[]> {
    await ensurePostgresSchema(this.store)
    return this.read()
  }

  protected abstract read(): Promise<T[]>

  /** Loads the table when another instance changed it (or on the first call); true when it did. */
  refresh(): Promise<boolean> {
    // One look at a time; a caller during a look waits for it.
    this.polling ??= this.look().finally(() => {
      this.polling = null
    })
    return this.polling
  }

  private async look(): Promise<boolean> {
    await ensurePostgresSchema(this.store)
    const row = await this.store.get<{ version: number }>(`SELECT version FROM ${this.versionTable} WHERE one = 1`)
    const v = row?.version ?? 0
    if (v === this.version) return false
    const rows = await this.read()
    this.version = v
    this.onChange(rows)
    return true
  }

  /** Polls every `pollMs` until `close`. */
  start(pollMs = SHARED_POLL_MS): void {
    if (this.timer) return
    this.timer = setInterval(() => {
      this.refresh().catch(() => {
        // the database is away: what is in force stays, the next poll tries again
      })
    }, pollMs)
    this.timer.unref()
  }

  /**
   * Runs `fn` in one transaction; when it says it changed the table, the version is bumped in the
   * same transaction and this instance reloads before answering.
   */
  protected async write<R>(fn: (tx: SqlStore) => Promise<{ result: R; changed: boolean }>): Promise<R> {
    await ensurePostgresSchema(this.store)
    const out = await this.store.transaction(async (tx) => {
      const o = await fn(tx)
      if (o.changed) await tx.run(`UPDATE ${this.versionTable} SET version = version + 1 WHERE one = 1`)
      return o
    })
    if (out.changed) {
      // A look already under way may predate the write.
      if (this.polling) await this.polling.catch(() => false)
      await this.refresh()
    }
    return out.result
  }

  close(): void {
    if (this.timer) clearInterval(this.timer)
    this.timer = null
  }
}

/** Reads a shared table until it succeeds (the database may be starting too), then polls it. */
export async function firstLoad(table: Pick<SharedTable<unknown>, 'refresh' | 'start'>, closed: () => boolean): Promise<void> {
  while (!closed()) {
    try {
      await table.refresh()
      break
    } catch {
      await new Promise((r) => setTimeout(r, 1000).unref())
    }
  }
  if (!closed()) table.start()
}
