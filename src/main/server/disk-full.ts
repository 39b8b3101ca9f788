import { statfsSync } from 'node:fs'
import { StartupError } from './startup-error'

/** Free bytes below which a disk that failed a write is taken to be full (a few SQLite pages). */
const NEARLY_NONE = 64 * 1024

/**
 * Whether `err` (from opening or writing the data folder `dir`) came from a full disk: ENOSPC,
 * SQLITE_FULL, or a SQLite I/O error (its -shm file could not be sized, a write failed) on a
 * disk with next to no free space left. SQLite reports the last as "disk I/O error", which says
 * nothing of the cause.
 */
export function diskFull(err: unknown, dir: string): boolean {
  const code = (err as { code?: unknown } | null)?.code
  if (code === 'ENOSPC' || code === 'SQLITE_FULL') return true
  if (typeof code !== 'string' || !code.startsWith('SQLITE_IOERR')) return false
  try {
    const fs = statfsSync(dir)
    return fs.bavail * fs.bsize < NEARLY_NONE
  } catch {
    return false
  }
}

/** The start-up error for a full disk (null when `err` is not that): it names the folder and says what to do. */
export function diskFullAtStartup(err: unknown, dir: string): StartupError | null {
  if (!diskFull(err, dir)) return null
  const code = (err as { code: string }).code
  return new StartupError(`the disk holding the data folder ${dir} is full (${code}); free some space on it, or choose another folder with --data-dir`)
}
