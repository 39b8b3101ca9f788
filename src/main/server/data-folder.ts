import { join } from 'node:path'
import type Database from 'better-sqlite3'
import { DB_FILE } from '../config/paths'
import type { Config } from '../config/schema'
import { STARTUP_BUSY_MS, isLocked, openDatabase } from '../ledger/db'
import { type OpenOptions, type Storage, openStorage } from '../storage/open'
import { type DataLock, claimDataDir } from './data-lock'
import { diskFullAtStartup } from './disk-full'
import { StartupError } from './startup-error'

export interface DataFolder {
  /** The folder's SQLite file (with `storage.url` too: this instance's own state). */
  db: Database.Database
  /** The claim on the folder: one server per data folder (./data-lock.ts). */
  lock: DataLock
  /** Where calls are stored and read: this file, or PostgreSQL (storage/open.ts). */
  storage: Storage
}

/**
 * The start-up error for a database another process kept locked past `busyMs` (null for any
 * other error): what holds it, and what to do.
 */
export function lockedAtStartup(err: unknown, dbFile: string, busyMs: number): StartupError | null {
  if (!isLocked(err)) return null
  return new StartupError(
    `the database ${dbFile} stayed locked by another process for ${busyMs < 1000 ? `${busyMs} ms` : `${Math.round(busyMs / 1000)} s`} (a \`burnrate import\`, or another program writing it); start Burnrate again once it is done`,
  )
}

/**
 * Opens the data folder's database, claims the folder and opens the storage. A step that fails
 * closes what the steps before it opened, and stops start-up with what to do about it. The
 * database waits up to `busyMs` for another process's write lock (the caller shortens it once
 * start-up is done: ../ledger/db.ts).
 */
export function openDataFolder(config: Config, opts: OpenOptions, busyMs = STARTUP_BUSY_MS): DataFolder {
  const dbFile = join(config.data_dir, DB_FILE)
  let db: Database.Database
  try {
    db = openDatabase(dbFile, busyMs)
  } catch (err) {
    const refused = lockedAtStartup(err, dbFile, busyMs) ?? diskFullAtStartup(err, config.data_dir)
    if (refused) throw refused
    const e = err as NodeJS.ErrnoException
    throw new StartupError(
      `cannot open the database ${dbFile} (${e.code ?? 'error'}: ${e.message.split('\n')[0]}); make sure the data folder is writable, or choose another with --data-dir`,
    )
  }
  let lock: DataLock
  try {
    lock = claimDataDir(config.data_dir, `http://${config.server.host}:${config.server.port}`)
  } catch (err) {
    db.close()
    throw err
  }
  try {
    return { db, lock, storage: openStorage(config, db, opts) }
  } catch (err) {
    db.close()
    lock.release()
    throw lockedAtStartup(err, dbFile, busyMs) ?? diskFullAtStartup(err, config.data_dir) ?? err
  }
}
