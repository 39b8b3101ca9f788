import type Database from 'better-sqlite3'

/**
 * How far the team server has acknowledged this Burnrate's calls: the id of the last call it
 * answered for, and the last (revision, id) of the revised calls sent again, per team server
 * address, in the local database, so a restart resumes there. A new address starts from the
 * first call (the new server gets the whole history, as it is now) and after the newest revision,
 * or where another address's revision cursor is, if that is earlier.
 */
export class TeamCursor {
  private readonly write: Database.Statement
  private readonly writeRevision: Database.Statement
  private last: number
  private rev: { revision: number; id: number }

  constructor(
    db: Database.Database,
    readonly url: string,
    /** The newest revision in the ledger, where a new address's revision cursor starts. */
    latestRevision: () => number,
  ) {
    const row = db.prepare('SELECT last_id, revision, revision_id FROM team_cursor WHERE url = ?').get(url) as
      | { last_id: number; revision: number; revision_id: number }
      | undefined
    this.write = db.prepare(
      'INSERT INTO team_cursor (url, last_id, updated_at, revision, revision_id) VALUES (?, ?, ?, ?, ?) ON CONFLICT (url) DO UPDATE SET last_id = excluded.last_id, updated_at = excluded.updated_at',
    )
    this.writeRevision = db.prepare('UPDATE team_cursor SET revision = ?, revision_id = ?, updated_at = ? WHERE url = ?')
    this.last = row?.last_id ?? 0
    this.rev = row ? { revision: row.revision, id: row.revision_id } : { revision: latestRevision(), id: 0 }
    if (!row) {
      // Another address may be this same team server (moved, or spelt another way): it holds the
      // calls as that cursor left them, so the revisions that cursor had not sent are sent here too.
      const other = db.prepare('SELECT revision, revision_id AS id FROM team_cursor ORDER BY revision, revision_id LIMIT 1').get() as
        | { revision: number; id: number }
        | undefined
      if (other && (other.revision < this.rev.revision || (other.revision === this.rev.revision && other.id < this.rev.id))) this.rev = other
    }
    // Written now, not at the first answer: a restart before it must not start the revision
    // cursor after revisions made meanwhile to calls the server may hold already (sent, the
    // answer lost), which would then never be sent again.
    if (!row) this.write.run(url, 0, Date.now(), this.rev.revision, this.rev.id)
  }

  get lastId(): number {
    return this.last
  }

  get revision(): { revision: number; id: number } {
    return this.rev
  }

  /** Moves past `id` (never back). */
  advance(id: number): void {
    if (id <= this.last) return
    this.write.run(this.url, id, Date.now(), this.rev.revision, this.rev.id)
    this.last = id
  }

  /** Moves the revision cursor past `to` (never back; the row exists from the start). */
  advanceRevision(to: { revision: number; id: number }): void {
    if (to.revision < this.rev.revision || (to.revision === this.rev.revision && to.id <= this.rev.id)) return
    this.writeRevision.run(to.revision, to.id, Date.now(), this.url)
    this.rev = to
  }
}
