import { join } from 'node:path'
import type Database from 'better-sqlite3'
import { DB_FILE } from '../config/paths'
import type { Config } from '../config/schema'
import { STARTUP_BUSY_MS, isLocked, makeDataDir, openDatabase } from '../ledger/db'
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
 * Claims the data folder, then opens its database and the storage. The claim comes first: the
 * database's migrations would otherwise upgrade the file under the Burnrate that serves the folder
 * (an older one, on a schema it does not know) before this start-up found it there and stopped.
 * A step that fails undoes the steps before it, and stops start-up with what to do about it. The
 * database waits up to `busyMs` for another process's write lock (the caller shortens it once
 * start-up is done: ../ledger/db.ts).
 */
export function openDataFolder(config: Config, opts: OpenOptions, busyMs = STARTUP_BUSY_MS): DataFolder {
  const dbFile = join(config.data_dir, DB_FILE)
  try {
    // The claim's file goes in it: the folder is made (private) as opening the database would.
    makeDataDir(config.data_dir)
  } catch (err) {
    throw cannotOpen(err, dbFile, config.data_dir, busyMs)
  }
  const lock = claimDataDir(config.data_dir, `http://${config.server.host}:${config.server.port}`)
  let db: Database.Database
  try {
    db = openDatabase(dbFile, busyMs)
  } catch (err) {
    lock.release()
    throw cannotOpen(err, dbFile, config.data_dir, busyMs)
  }
  try {
    return { db, lock, storage: openStorage(config, db, opts) }
  } catch (err) {
    db.close()
    lock.release()
    throw lockedAtStartup(err, dbFile, busyMs) ?? diskFullAtStartup(err, config.data_dir) ?? err
  }
}

/** Why the data folder or its database could not be made or opened, and what to do. */
function cannotOpen(err: unknown, dbFile: string, dataDir: string, busyMs: number): StartupError {
  const refused = lockedAtStartup(err, dbFile, busyMs) ?? diskFullAtStartup(err, dataDir)
  if (refused) return refused
  const e = err as NodeJS.ErrnoException
  return new StartupError(
    `cannot open the database ${dbFile} (${e.code ?? 'error'}: ${e.message.split('\n')[0]}); make sure the data folder is writable, or choose another with --data-dir`,
  )
}
