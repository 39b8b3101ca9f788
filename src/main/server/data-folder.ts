import { join } from 'node:path'
import type Database from 'better-sqlite3'
import { DB_FILE } from '../config/paths'
import type { Config } from '../config/schema'
import { openDatabase } from '../ledger/db'
import { type OpenOptions, type Storage, openStorage } from '../storage/open'
import { type DataLock, claimDataDir } from './data-lock'
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
 * Opens the data folder's database, claims the folder and opens the storage. A step that fails
 * closes what the steps before it opened, and stops start-up with what to do about it.
 */
export function openDataFolder(config: Config, opts: OpenOptions): DataFolder {
  const dbFile = join(config.data_dir, DB_FILE)
  let db: Database.Database
  try {
    db = openDatabase(dbFile)
  } catch (err) {
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
    throw err
  }
}
