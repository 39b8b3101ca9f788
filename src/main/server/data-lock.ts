import { randomBytes } from 'node:crypto'
import { closeSync, openSync, readFileSync, renameSync, unlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { type LockWay, createLockFile, dropLeftovers, stillOwn, takeOverLock } from '../fs/lock-file'
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
  const own = (): boolean => readLock(file)?.claim === body.claim
  for (let attempt = 0; ; attempt++) {
    try {
      // Made, but put back over by another that had moved its holder's aside meanwhile: held by that one.
      if (createLockFile(file, `${JSON.stringify(body)}\n`, WAY(file)) && stillOwn(file, MOVED_ASIDE, running, own, liveLock, WAY(file))) break
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
  dropLeftovers(dataDir, LEFTOVER, running)
  return {
    listening(url) {
      if (!own()) return
      body.url = url
      // Through a new file renamed over it, never opened through what is there: in a data folder
      // other users may write, one could have swapped the lock for a link (to a file of the
      // user's) since the check above, and the write would go to that file.
      const tmp = beside(file, 'tmp')
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
 * How server.lock is made (../fs/lock-file.ts): written first to a file of its own, its name drawn
 * at random; one a full disk cut short in place is left, and start-up stops on the full disk; a
 * file of its own that cannot be written falls back to making the lock in place (created, then
 * written, as builds before the link did everywhere), which says what stops it.
 */
const WAY = (file: string): LockWay => ({ tmp: beside(file, 'tmp'), dropCutShort: false, inPlaceIfTmpFails: true })

/**
 * A file of this process's beside the lock (`tmp`: the lock or its address written first; `old`:
 * a stale lock moved aside), named by its pid and a random part: what a crash between two steps
 * leaves there is removed by the next claim once that process is gone (LEFTOVER).
 */
const beside = (file: string, kind: 'tmp' | 'old'): string => `${file}.${process.pid}.${randomBytes(6).toString('hex')}.${kind}`
const LEFTOVER = /^server\.lock\.(\d+)\.[0-9a-f]{12}\.(?:tmp|old)$/
/** A lock moved aside to be judged (takeOver), named by the pid that moved it. */
const MOVED_ASIDE = /^server\.lock\.(\d+)\.[0-9a-f]{12}\.old$/
const running = (pid: number): boolean => otherProcessRuns(pid, undefined)
/** Whether a lock moved aside is a live holder's (another process's that runs). */
const liveLock = (aside: string): boolean => {
  const moved = readLock(aside)
  return moved !== null && holds(moved)
}

/**
 * Takes over the lock `stale` was read from: moved aside, then removed if it is the lock read. If
 * it is not (another Burnrate took the stale one over first and this moved its claim), it is put
 * back, and the next look finds that Burnrate holding the folder: removed, both served it.
 */
function takeOver(file: string, stale: LockBody | null): void {
  const isStale = (aside: string): boolean => {
    const moved = readLock(aside)
    return moved === null ? stale === null : stale !== null && moved.claim === stale.claim && moved.pid === stale.pid
  }
  try {
    takeOverLock(file, beside(file, 'old'), isStale, WAY(file))
  } catch {
    // Gone already (taken over and let go), or it cannot be moved: the next attempt creates it or says why.
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
