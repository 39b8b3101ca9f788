import { closeSync, constants, existsSync, fstatSync, openSync, readFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { type LockWay, type TakeOver, createLockFile, dropLeftovers, stillOwn, takeOverLock } from '../fs/lock-file'
import { otherProcessRuns, processStart } from '../server/data-lock'
import { ConnectError } from './errors'
import { makeFolders } from './files'

export const LOCK_FILE = 'agent-connections.lock'

/**
 * How this lock is made (../fs/lock-file.ts): written first to a file named by this process's pid;
 * one a full disk cut short is removed (an empty lock would be taken over as a crash's); a file of
 * this process's that cannot be written refuses the lock with what stopped it.
 */
const WAY = (file: string): LockWay => ({ tmp: `${file}.${process.pid}.tmp`, dropCutShort: true, inPlaceIfTmpFails: false })

/** What a Burnrate that crashed making the lock or taking one over left beside it (its file of its own, a lock it moved aside), named by its pid. */
const LEFTOVER = /^agent-connections\.lock\.(\d+)\.(?:tmp|stale)$/
/** A lock moved aside to be judged (exclusive), named by the pid that moved it. */
const MOVED_ASIDE = /^agent-connections\.lock\.(\d+)\.stale$/

/**
 * Runs `fn` as the only Burnrate changing the agents' files and records in `dataDir` (the CLI's
 * connect while the desktop app connects another agent or settles a cut-off one): each reads the
 * records, then writes them whole, so two at once would drop the other's record and leave its
 * agent pointed at Burnrate with nothing for Disconnect to undo. Another live process holding it
 * is a conflict; a lock left by a crash (its process gone, or cut short) is taken over, and `fn`
 * is told when it was made (else null). Without
 * `create`, a data folder not made yet (no records: nothing to settle or undo) is not made for it.
 */
export function exclusive<T>(dataDir: string, fn: (crashed: number | null) => T, opts: { create?: boolean } = {}): T {
  const file = join(dataDir, LOCK_FILE)
  if (!opts.create && !existsSync(dataDir)) return fn(null)
  /** When the lock of a Burnrate that crashed holding it was made (ms): what it left is no older. */
  let crashed: number | null = null
  const body = JSON.stringify({ pid: process.pid, proc_start: processStart(process.pid) ?? undefined })
  for (let attempt = 0; ; attempt++) {
    try {
      if (opts.create) makeFolders(dataDir)
      // Made, but put back over by another that had moved its holder's aside meanwhile: held by that one.
      if (!createLockFile(file, body, WAY(file)) || !stillOwn(file, MOVED_ASIDE, running, mine, liveLock, WAY(file))) throw Object.assign(new Error(`${file} exists`), { code: 'EEXIST' })
    } catch (err) {
      const e = err as NodeJS.ErrnoException
      if (e.code !== 'EEXIST' || attempt >= 3) {
        throw lockFailed(file, e)
      }
      // Another user's file under the name (a data folder they may write), or a link or FIFO, is
      // neither read (its pid and date are theirs to choose; a FIFO's read would wait for good) nor
      // taken over: readLock throws, naming it.
      const lock = readLock(file)
      if (lock === null) continue
      if (holds(lock)) throw conflict(lock.holder!.pid, file)
      // A crash's. Another Burnrate may have found it too, and taken it over since: what is under
      // the name now may be its lock, not the one read. So it is moved aside and judged again on
      // what was moved (../fs/lock-file.ts takeOverLock): a crash's is removed; another's, put back.
      let moved: Lock | null = null
      const isStale = (aside: string): boolean => {
        moved = readLock(aside)
        return !(moved && holds(moved))
      }
      let outcome: TakeOver
      try {
        outcome = takeOverLock(file, `${file}.${process.pid}.stale`, isStale, WAY(file))
      } catch (err) {
        throw err instanceof ConnectError ? err : lockFailed(file, err as NodeJS.ErrnoException)
      }
      // Only the user's own lock (the only kind read) dates what a crash left: one another user
      // planted, dated as they like, would have every backup, or whatever their link under
      // agent-backups/ points to, taken for a crash's leftovers and deleted (./state.ts dropUnnamed).
      const taken = outcome === 'taken' ? (moved as Lock | null) : null
      if (taken) crashed = Math.min(crashed ?? Infinity, taken.mtimeMs)
      continue
    }
    break
  }
  dropLeftovers(dataDir, LEFTOVER, running)
  try {
    return fn(crashed)
  } finally {
    if (mine()) rmSync(file, { force: true })
  }

  function mine(): boolean {
    try {
      return readLock(file)?.holder?.pid === process.pid
    } catch {
      // Swapped for another user's file meanwhile: theirs.
      return false
    }
  }
}

const running = (pid: number): boolean => otherProcessRuns(pid, undefined)
/** Whether a lock moved aside is a live holder's (the user's own, naming another process that runs). */
const liveLock = (aside: string): boolean => {
  const moved = readLock(aside)
  return moved !== null && holds(moved)
}

/** Whether the lock names another process that runs. */
const holds = (lock: Lock): boolean => !!lock.holder && otherProcessRuns(lock.holder.pid, lock.holder.proc_start)

function conflict(pid: number, file: string): ConnectError {
  return new ConnectError('conflict', `Another Burnrate (pid ${pid}) is connecting or disconnecting an agent right now; try again in a moment (Burnrate wrote nothing; if no Burnrate runs, delete ${file}).`)
}

function lockFailed(file: string, err: NodeJS.ErrnoException): ConnectError {
  return new ConnectError('not_saved', `Burnrate could not take its lock ${file} in its data folder (${err.code ?? err.message}); Burnrate wrote nothing.`)
}

interface Lock {
  /** The process it names; null when it names none (empty: cut off before it was written). */
  holder: { pid: number; proc_start?: string } | null
  /** When it was last written (ms). */
  mtimeMs: number
}

/**
 * The lock, when it is there and the user's own (null when gone). What is not the user's own regular file is not read: throws a ConnectError naming it. It is
 * opened without following a link and without waiting (a FIFO), and checked on what was opened.
 */
function readLock(file: string): Lock | null {
  let fd: number
  try {
    fd = openSync(file, constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0) | (constants.O_NONBLOCK ?? 0))
  } catch (err) {
    const e = err as NodeJS.ErrnoException
    if (e.code === 'ENOENT') return null
    if (e.code === 'ELOOP' || e.code === 'EMLINK') throw untrustedLock(file, 'it is a link (not followed)')
    throw lockFailed(file, e)
  }
  try {
    const st = fstatSync(fd)
    if (!st.isFile()) throw untrustedLock(file, 'it is not a regular file')
    if (typeof process.getuid === 'function' && process.platform !== 'win32') {
      if (st.uid !== process.getuid()) throw untrustedLock(file, `it belongs to another user (uid ${st.uid})`)
      if (st.mode & 0o002) throw untrustedLock(file, 'any user may write it')
    }
    let v: { pid?: unknown; proc_start?: string } = {}
    try {
      v = JSON.parse(readFileSync(fd, 'utf8')) as typeof v
    } catch {
      // Empty or cut short: names no process.
    }
    const named = typeof v.pid === 'number' && Number.isInteger(v.pid) && v.pid > 0
    return { holder: named ? { pid: v.pid as number, proc_start: v.proc_start } : null, mtimeMs: st.mtimeMs }
  } finally {
    closeSync(fd)
  }
}

/** What is under the lock's name is not the user's own lock: nothing of it is believed, nor is it removed. */
function untrustedLock(file: string, why: string): ConnectError {
  return new ConnectError(
    'conflict',
    `${file} is not a lock of yours: ${why}. Burnrate did not read it and wrote nothing. Another user can put files in this data folder; ` +
      'if no Burnrate of yours is connecting an agent, delete it, and use a data folder of your own with mode 0700 (--data-dir, BURNRATE_DATA_DIR or data_dir).',
    file,
  )
}
