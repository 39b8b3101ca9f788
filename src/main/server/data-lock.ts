import { randomBytes } from 'node:crypto'
import { closeSync, linkSync, openSync, readFileSync, renameSync, unlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { untrustedIfThere } from '../security/owned-file'
import { diskFullAtStartup } from './disk-full'
import { StartupError } from './startup-error'

/**
 * One server per data folder. Each server keeps its budgets' spend meters in memory, loaded at
 * start-up; a second server on the same folder would not see the first one's proxied calls, so
 * a block rule would let through twice its limit. The server claims the folder with this file
 * (created exclusively) before it opens the database; the CLI's readers and `import` never take it,
 * and keep working beside it, but do not upgrade its database (../cli/target.ts).
 */
export const LOCK_FILE = 'server.lock'

interface LockBody {
  pid: number
  /** The address it listens on, once it does; the configured one before. */
  url: string
  started_at: string
  /** Tells this claim from a later one of the same process (tests start servers in turn on one folder). */
  claim: string
  /** When the process started (Linux: /proc/<pid>/stat), so a pid used again by another process after a crash is not taken for it. */
  proc_start?: string
}

export interface DataLock {
  /** Records the address clients reach this server at, for the message a second server gives. */
  listening(url: string): void
  /** Removes the file, if it is still this claim's. */
  release(): void
}

let claims = 0

/**
 * Claims `dataDir` (made by then, private: ./data-folder.ts; the database is opened after) for this process, or throws a StartupError naming the Burnrate that holds it.
 * A lock whose process is gone (a crash, a kill) is taken over; so is one of this process (a
 * server started again in the same process, the desktop's attempts on another port).
 */
export function claimDataDir(dataDir: string, address: string): DataLock {
  const file = join(dataDir, LOCK_FILE)
  const body: LockBody = { pid: process.pid, url: address, started_at: new Date().toISOString(), claim: `${process.pid}-${Date.now()}-${++claims}` }
  const start = processStart(process.pid)
  if (start !== null) body.proc_start = start
  for (let attempt = 0; ; attempt++) {
    try {
      if (createLock(file, body)) break
    } catch (err) {
      throw diskFullAtStartup(err, dataDir) ?? cannotClaim(file, err as NodeJS.ErrnoException)
    }
    if (attempt >= 3) throw cannotClaim(file, Object.assign(new Error('it is claimed again each time it is taken over'), { code: 'EEXIST' }))
    const other = readLock(file)
    if (other && holds(other)) {
      throw new StartupError(
        `another Burnrate (pid ${other.pid}) serves this data folder ${dataDir} at ${other.url}; stop it or use another --data-dir (if no Burnrate runs, delete ${file})`,
      )
    }
    // Stale (its process is gone), unreadable (cut short by a crash) or this process's own: taken over.
    takeOver(file, other)
  }
  const own = (): boolean => readLock(file)?.claim === body.claim
  return {
    listening(url) {
      if (!own()) return
      body.url = url
      // Through a new file renamed over it, never opened through what is there: in a data folder
      // other users may write, one could have swapped the lock for a link (to a file of the
      // user's) since the check above, and the write would go to that file.
      const tmp = `${file}.${randomBytes(6).toString('hex')}.tmp`
      try {
        const fd = openSync(tmp, 'wx', 0o600)
        try {
          writeFileSync(fd, `${JSON.stringify(body)}\n`)
        } finally {
          closeSync(fd)
        }
        renameSync(tmp, file)
      } catch {
        try {
          unlinkSync(tmp)
        } catch {}
      }
    },
    release() {
      if (!own()) return
      try {
        unlinkSync(file)
      } catch {}
    },
  }
}

/**
 * Creates `file` holding `body`, or returns false when it exists. Written whole before it is there
 * (a file of its own, linked to the lock's name): a Burnrate started at the same moment never reads
 * it empty, which it would take for one a crash cut short and take over, both then serving the
 * folder. Where links cannot be made (some network and FAT mounts) it is created and then written,
 * as builds before this one did everywhere.
 */
function createLock(file: string, body: LockBody): boolean {
  const text = `${JSON.stringify(body)}\n`
  const tmp = `${file}.${randomBytes(6).toString('hex')}.tmp`
  let linked: boolean | null = null
  let made = false
  try {
    const fd = openSync(tmp, 'wx', 0o600)
    made = true
    try {
      writeFileSync(fd, text)
    } finally {
      closeSync(fd)
    }
    linkSync(tmp, file)
    linked = true
  } catch (err) {
    // Any other failure (no links on this file system) falls back to the way below, which says what stops it.
    if ((err as NodeJS.ErrnoException).code === 'EEXIST' && made) linked = false
  } finally {
    try {
      if (made) unlinkSync(tmp)
    } catch {}
  }
  if (linked !== null) return linked
  try {
    const fd = openSync(file, 'wx', 0o600)
    try {
      writeFileSync(fd, text)
    } finally {
      closeSync(fd)
    }
    return true
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false
    throw err
  }
}

/**
 * Takes over the lock `stale` was read from: moved aside (one step: of two Burnrates taking it over
 * at once, only one moves it), then removed if it is the lock read. If it is not (another Burnrate
 * took the stale one over first and this moved its claim), it is put back, and the next look finds
 * that Burnrate holding the folder: removed, both served it. Put back by a link, or where links
 * cannot be made, as locks are made there (created, then written with what was moved).
 */
function takeOver(file: string, stale: LockBody | null): void {
  const aside = `${file}.${randomBytes(6).toString('hex')}.old`
  try {
    renameSync(file, aside)
  } catch {
    // Gone already (taken over and let go): the next attempt creates it.
    return
  }
  const moved = readLock(aside)
  const same = moved === null ? stale === null : stale !== null && moved.claim === stale.claim && moved.pid === stale.pid
  if (!same) {
    try {
      linkSync(aside, file)
    } catch (err) {
      // Claimed again meanwhile (EEXIST): the next look finds the folder held.
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') putBackInPlace(aside, file)
    }
  }
  try {
    unlinkSync(aside)
  } catch {}
}

/** A lock moved aside put back under its name where no link can be made: a new file (never one made there meanwhile) holding what was moved. */
function putBackInPlace(aside: string, file: string): void {
  try {
    const text = readFileSync(aside)
    const fd = openSync(file, 'wx', 0o600)
    try {
      writeFileSync(fd, text)
    } finally {
      closeSync(fd)
    }
  } catch {
    // Claimed again meanwhile, or the folder cannot be written: the next look finds it held or free.
  }
}

/**
 * The other Burnrate that holds `dataDir` now (its pid and the address it listens on), or null:
 * none, or its lock is stale or this process's own. The desktop attaches to it rather than
 * starting a server that could not claim the folder.
 */
export function dataDirHolder(dataDir: string): { pid: number; url: string } | null {
  const server = dataDirServer(dataDir)
  return server && server.pid !== process.pid ? server : null
}

/**
 * The Burnrate that serves `dataDir` now, this process included (its lock names a live process
 * and its address), or null. Only a lock that is the user's own names one: the CLI talks to (and
 * hands its token to) the server the lock names, `connect` points agents (and their keys) at it
 * and the desktop attaches to it, so in a data folder other users may write (one the user does
 * not own, such as a folder in /tmp) a lock they planted names none.
 */
export function dataDirServer(dataDir: string): { pid: number; url: string } | null {
  const file = join(dataDir, LOCK_FILE)
  const lock = readLock(file)
  // Another user may have written it (../security/owned-file.ts).
  if (lock && untrustedIfThere(file) !== null) return null
  return lock && typeof lock.url === 'string' && alive(lock.pid) && !reused(lock, lock.pid) ? { pid: lock.pid, url: lock.url } : null
}

/** Whether the lock is another live process's, which a claim must not take over. */
function holds(lock: LockBody): boolean {
  return otherProcessRuns(lock.pid, lock.proc_start)
}

/**
 * Whether `pid` is another process than this one, still running and not a later one given the
 * same pid (`procStart`: what processStart said when it was written). ../connect/recover.ts.
 */
export function otherProcessRuns(pid: number, procStart: string | undefined): boolean {
  return pid !== process.pid && alive(pid) && !reused({ proc_start: procStart }, pid)
}

function readLock(file: string): LockBody | null {
  try {
    const v = JSON.parse(readFileSync(file, 'utf8')) as Partial<LockBody>
    return typeof v.pid === 'number' && Number.isInteger(v.pid) && v.pid > 0 ? (v as LockBody) : null
  } catch {
    return null
  }
}

/** Whether a process with this id runs (EPERM: it does, as another user). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM'
  }
}

/**
 * Whether the lock's pid now belongs to another process than the one that wrote it (a crash, then
 * the pid given out again: in a container a restarted server often gets a low pid an earlier one
 * had). Known where the process's start time can be read (Linux); elsewhere, never assumed.
 */
function reused(lock: Pick<LockBody, 'proc_start'>, pid: number): boolean {
  if (lock.proc_start === undefined) return false
  const now = processStart(pid)
  return now !== null && now !== lock.proc_start
}

/** A process's start time in clock ticks since boot (field 22 of /proc/<pid>/stat), or null where there is no /proc. */
export function processStart(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    // The command name (field 2) is in parentheses and may hold spaces: fields count from after it.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? null
  } catch {
    return null
  }
}

function cannotClaim(file: string, e: NodeJS.ErrnoException): StartupError {
  return new StartupError(`cannot create ${file} (${e.code ?? 'error'}: ${e.message.split('\n')[0]}); make sure the data folder is writable, or choose another with --data-dir`)
}
