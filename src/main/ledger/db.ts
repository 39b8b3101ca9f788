import { chmodSync, closeSync, existsSync, mkdirSync, openSync } from 'node:fs'
import { dirname } from 'node:path'
import Database from 'better-sqlite3'
import { SchemaBehindError, migrate, schemaVersions } from './migrations'

/** The data folder: only its owner may list or enter it. */
export const DIR_MODE = 0o700
/** The database and its `-wal` and `-shm` files: only their owner may read them. */
export const FILE_MODE = 0o600

/**
 * Makes the data folder and the database files private to this user, whether they are new or
 * were made by an older version (0755 and 0644): the WAL holds recent rows, whole-key rule
 * patterns included. SQLite creates `-wal` and `-shm` with the main file's mode, so the main
 * file is created 0600 before SQLite opens it. No-op on Windows, where modes do not apply.
 */
function makePrivate(file: string): void {
  if (process.platform === 'win32') return
  makeDataDir(dirname(file))
  if (!existsSync(file)) closeSync(openSync(file, 'a', FILE_MODE))
  for (const f of [file, `${file}-wal`, `${file}-shm`, `${file}-journal`]) {
    try {
      chmodSync(f, FILE_MODE)
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err
    }
  }
}

/**
 * Makes the data folder, or an older version's, private to this user (0700; no-op for the mode
 * on Windows). A server claims the folder (../server/data-lock.ts) before it opens the database,
 * so the folder is made first, as private as the database would have made it.
 */
export function makeDataDir(dir: string): void {
  if (process.platform === 'win32') {
    mkdirSync(dir, { recursive: true })
    return
  }
  mkdirSync(dir, { recursive: true, mode: DIR_MODE })
  try {
    chmodSync(dir, DIR_MODE)
  } catch (err) {
    // A folder this user does not own (--data-dir /tmp): the files themselves are still private.
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') throw err
  }
}

/**
 * How long a write on the event loop waits for another connection's write lock once the server
 * runs: short, so that a write that cannot go now is retried later rather than stall proxied calls.
 */
export const RUNTIME_BUSY_MS = 50

/**
 * How long the server's start-up writes (migrations, the dashboard's catch-up, features' tables)
 * wait for another process's write lock: `burnrate import`, or any program writing the file,
 * holds it for a moment, and nothing waits on a server that is not listening yet.
 */
export const STARTUP_BUSY_MS = 15_000

/**
 * Opens (creating when needed) the ledger database: WAL, so readers never block the writer
 * and a killed process loses nothing committed; synchronous=NORMAL, which in WAL mode is
 * durable across a process crash and only skips an fsync per commit. The busy timeout is
 * `busyMs` (default RUNTIME_BUSY_MS; a server opens with STARTUP_BUSY_MS and sets it with
 * `setBusyTimeout` once started). The folder is made 0700 and the files 0600 (see makePrivate).
 * The schema is brought up to date, unless `upgrade` is false: then an older one throws
 * SchemaBehindError, the file left as it was (only the server that claimed the folder upgrades it
 * while one serves it).
 */
export function openDatabase(file: string, busyMs = RUNTIME_BUSY_MS, opts: { upgrade?: boolean } = {}): Database.Database {
  if (file !== ':memory:') makePrivate(file)
  const db = new Database(file)
  setBusyTimeout(db, busyMs)
  db.pragma('journal_mode = WAL')
  db.pragma('synchronous = NORMAL')
  db.pragma('foreign_keys = ON')
  if (opts.upgrade === false) {
    const { current, latest } = schemaVersions(db)
    if (current < latest) {
      db.close()
      throw new SchemaBehindError(file, current, latest)
    }
  }
  migrate(db)
  if (file !== ':memory:') makePrivate(file)
  return db
}

/** How long this connection's writes wait for another connection's write lock (ms). */
export function setBusyTimeout(db: Database.Database, ms: number): void {
  db.pragma(`busy_timeout = ${Math.max(0, Math.floor(ms))}`)
}

/** SQLite's "database is locked" (another connection holds the write lock past the busy timeout). */
export function isLocked(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code
  return typeof code === 'string' && (code === 'SQLITE_BUSY' || code.startsWith('SQLITE_BUSY_') || code === 'SQLITE_LOCKED')
}
