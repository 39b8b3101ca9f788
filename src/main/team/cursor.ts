import type Database from 'better-sqlite3'

/**
 * How far the team server has acknowledged this Burnrate's calls: the id of the last call it
 * answered for, per team server address, in the local database, so a restart resumes there.
 * A new address starts from the first call (the new server gets the whole history).
 */
export class TeamCursor {
  private readonly read: Database.Statement
  private readonly write: Database.Statement
  private last: number

  constructor(
    db: Database.Database,
    readonly url: string,
  ) {
    this.read = db.prepare('SELECT last_id FROM team_cursor WHERE url = ?').pluck()
    this.write = db.prepare(
      'INSERT INTO team_cursor (url, last_id, updated_at) VALUES (?, ?, ?) ON CONFLICT (url) DO UPDATE SET last_id = excluded.last_id, updated_at = excluded.updated_at',
    )
    this.last = (this.read.get(url) as number | undefined) ?? 0
  }

  get lastId(): number {
    return this.last
  }

  /** Moves past `id` (never back). */
  advance(id: number): void {
    if (id <= this.last) return
    this.write.run(this.url, id, Date.now())
    this.last = id
  }
}
