import { mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
import Database from 'better-sqlite3'
import { migrate } from './migrations'

/**
 * Opens (creating when needed) the ledger database: WAL, so readers never block the writer
 * and a killed process loses nothing committed; synchronous=NORMAL, which in WAL mode is
 * durable across a process crash and only skips an fsync per commit. The busy timeout is short:
 * the writer runs on the event loop and retries later rather than stall proxied calls.
 */
export function openDatabase(file: string): Database.Database {
  if (file !== ':memory:') mkdirSync(dirname(file), { recursive: true })
  const db = new Database(file)
  db.pragma('journal_mode = WAL')
  db.pragma('synchronous = NORMAL')
  db.pragma('busy_timeout = 50')
  db.pragma('foreign_keys = ON')
  migrate(db)
  return db
}
