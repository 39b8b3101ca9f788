import type Database from 'better-sqlite3'

/** One prefix pattern a key (by hash) was seen to match. */
export interface KeyPattern {
  api_key_hash: string
  pattern: string
}

/**
 * The prefix rule patterns each API key (by hash) was seen to match, kept in this machine's SQLite
 * file (`key_patterns`, ledger migration 22; on PostgreSQL too, as the other instances tell theirs
 * through the calls feed). The raw key is never stored, so after a restart this is how a key known
 * only by hash is found under its prefix rules (budget listing, alerts, tray, metrics). Written
 * after the call that taught it (a key's first call under a new pattern), never on its path.
 */
export class KeyPatternStore {
  private readonly insert: Database.Statement
  private readonly selectAll: Database.Statement
  private readonly write: (rows: readonly KeyPattern[]) => void
  private pending: KeyPattern[] = []
  private scheduled = false

  constructor(db: Database.Database) {
    this.insert = db.prepare('INSERT OR IGNORE INTO key_patterns (api_key_hash, pattern) VALUES (@api_key_hash, @pattern)')
    this.selectAll = db.prepare('SELECT api_key_hash, pattern FROM key_patterns')
    this.write = db.transaction((rows: readonly KeyPattern[]) => {
      for (const r of rows) this.insert.run(r)
    })
  }

  all(): KeyPattern[] {
    return this.selectAll.all() as KeyPattern[]
  }

  /** Keeps patterns a key was just seen to match (written on the next turn of the event loop). */
  add = (hash: string, patterns: readonly string[]): void => {
    for (const pattern of patterns) this.pending.push({ api_key_hash: hash, pattern })
    if (this.scheduled) return
    this.scheduled = true
    setImmediate(() => this.flush())
  }

  /** Writes what is pending; kept for the next try when the file cannot be written now. */
  flush(): void {
    this.scheduled = false
    if (this.pending.length === 0) return
    const rows = this.pending
    this.pending = []
    try {
      this.write(rows)
    } catch {
      // busy or read-only now: tried again with the next pattern learnt (or at close)
      this.pending = rows.concat(this.pending)
    }
  }
}
