import type Database from 'better-sqlite3'
import type { SqlParams, SqlStore } from './sql'

/**
 * The SQL seam over an open better-sqlite3 database. Statements are prepared once per text.
 * Parameters a statement does not name are left out (better-sqlite3 refuses unknown names).
 */
export class SqliteStore implements SqlStore {
  readonly dialect = 'sqlite' as const
  private readonly cache = new Map<string, { stmt: Database.Statement; names: string[] }>()
  private depth = 0

  constructor(readonly db: Database.Database) {}

  private prepared(sql: string) {
    let p = this.cache.get(sql)
    if (!p) {
      const names = [...new Set([...sql.matchAll(/@([A-Za-z_][A-Za-z0-9_]*)/g)].map((m) => m[1]))]
      p = { stmt: this.db.prepare(sql), names }
      this.cache.set(sql, p)
    }
    return p
  }

  private bind(names: string[], params?: SqlParams): Record<string, unknown> {
    const out: Record<string, unknown> = {}
    for (const n of names) {
      const v = params?.[n]
      out[n] = typeof v === 'boolean' ? (v ? 1 : 0) : v === undefined ? null : v
    }
    return out
  }

  async all<T>(sql: string, params?: SqlParams): Promise<T[]> {
    const p = this.prepared(sql)
    return p.stmt.all(this.bind(p.names, params)) as T[]
  }

  async get<T>(sql: string, params?: SqlParams): Promise<T | undefined> {
    const p = this.prepared(sql)
    return p.stmt.get(this.bind(p.names, params)) as T | undefined
  }

  async run(sql: string, params?: SqlParams): Promise<number> {
    const p = this.prepared(sql)
    return p.stmt.run(this.bind(p.names, params)).changes
  }

  async transaction<T>(fn: (tx: SqlStore) => Promise<T>): Promise<T> {
    // Nested calls join the outer transaction (SQLite has one writer per connection).
    if (this.depth > 0 || this.db.inTransaction) return fn(this)
    this.db.exec('BEGIN IMMEDIATE')
    this.depth++
    try {
      const out = await fn(this)
      this.db.exec('COMMIT')
      return out
    } catch (err) {
      if (this.db.inTransaction) this.db.exec('ROLLBACK')
      throw err
    } finally {
      this.depth--
    }
  }

  /** The database belongs to its opener; closing the seam only forgets its statements. */
  async close(): Promise<void> {
    this.cache.clear()
  }
}
