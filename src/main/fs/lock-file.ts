import { closeSync, linkSync, openSync, readFileSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'

/**
 * A lock file Burnrates race to make in the data folder: the server's server.lock
 * (../server/data-lock.ts) and connect's agent-connections.lock (../connect/lock.ts). Made whole
 * at once, a lock is never seen empty (taken for one a crash cut short, and taken over); one left
 * by a crash is moved aside and judged again on what was moved, so of two taking it over at once
 * only one does; a lock made while another's was moved aside is given up to it once it is put
 * back (stillOwn). What the two callers do differently is said in their LockWay.
 */
export interface LockWay {
  /** The file of this process's the lock is written to before it is linked under its name (removed first if there). */
  tmp: string
  /**
   * A lock made in place, or put back in place, that a full disk cut short is removed (connect:
   * an empty lock would be taken over as a crash's), rather than left for the next look to take
   * over (the server: start-up stops on the full disk).
   */
  dropCutShort: boolean
  /**
   * When the file of this process's cannot be made or written, the lock is made in place, which
   * says what stops it (the server), rather than failing with what stopped the file (connect).
   */
  inPlaceIfTmpFails: boolean
}

/**
 * Makes `file` holding `text` (mode 0600), or returns false when there is one. Written to
 * `way.tmp` first, then linked under its name, so another Burnrate never finds it empty. Where
 * links cannot be made (some network or FAT folders: EPERM on Linux, ENOTSUP on macOS, EISDIR on
 * Windows, libuv's name for what CreateHardLink gives on FAT32 and exFAT; any failure of the link
 * but EEXIST), it is made in place, which says what else stops it.
 */
export function createLockFile(file: string, text: string, way: LockWay): boolean {
  let written = false
  try {
    rmSync(way.tmp, { force: true })
    writeNew(way.tmp, text, true)
    written = true
  } catch (err) {
    if (!way.inPlaceIfTmpFails) throw err
  }
  if (written) {
    try {
      linkSync(way.tmp, file)
      return true
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false
    } finally {
      removeQuietly(way.tmp)
    }
  }
  try {
    writeNew(file, text, way.dropCutShort)
    return true
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false
    throw err
  }
}

/** What taking over a lock found stale did: nothing was there; the stale one was removed; another's was found and put back. */
export type TakeOver = 'gone' | 'taken' | 'put back'

/**
 * Takes over the lock at `file`, found stale: moved aside to `aside` (one rename moves it: of two
 * Burnrates taking it over at once, only one moves it), then judged again on what was moved, for
 * another Burnrate may have taken the stale one over since. `isStale(aside)` true: it is removed;
 * false: it is put back (and the next look finds its holder). A judge that throws puts it back too,
 * and the error goes on. A rename that fails but for ENOENT (gone) throws.
 */
export function takeOverLock(file: string, aside: string, isStale: (path: string) => boolean, way: Pick<LockWay, 'dropCutShort'>): TakeOver {
  try {
    renameSync(file, aside)
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return 'gone'
    throw err
  }
  let stale: boolean
  try {
    stale = isStale(aside)
  } catch (err) {
    putBack(aside, file, way)
    throw err
  }
  if (stale) {
    removeQuietly(aside)
    return 'taken'
  }
  putBack(aside, file, way)
  return 'put back'
}

/**
 * A lock moved aside put back under its name, by a link, or where links cannot be made, as locks
 * are made there (a new file holding what was moved); then the file moved aside is removed. One
 * made there meanwhile (a third Burnrate finding the name free) is replaced by it: its maker finds
 * it not its own once this put-back is done (stillOwn), and is refused as the others are, where
 * it would have gone on beside the lock's holder, and the lock would have been lost to it.
 */
function putBack(aside: string, file: string, way: Pick<LockWay, 'dropCutShort'>): void {
  let madeMeanwhile = false
  try {
    linkSync(aside, file)
  } catch (err) {
    madeMeanwhile = (err as NodeJS.ErrnoException).code === 'EEXIST'
    if (!madeMeanwhile) {
      try {
        writeNew(file, readFileSync(aside), way.dropCutShort)
      } catch (inPlace) {
        // Or the folder cannot be written: the next look finds it held or free.
        madeMeanwhile = (inPlace as NodeJS.ErrnoException).code === 'EEXIST'
      }
    }
  }
  if (madeMeanwhile) {
    try {
      renameSync(aside, file)
    } catch {
      // The folder cannot be written: the next look finds it held.
    }
  }
  removeQuietly(aside)
}

/**
 * Whether the lock this process has just made at `file` is still its own (`isOwn`) once no other
 * running Burnrate (`runs`) has a lock moved aside beside it (the names `movedAside` matches, the
 * pid that moved it its first group). One that moved the holder's lock aside to judge it, as this
 * one found the name free, puts it back over this one's (putBack): this process then holds no lock,
 * and looks again. A lock moved aside is judged and put back at once: waited for up to 10 s (a
 * process stopped in between), then the lock is taken as it is. One moved aside more than 10 s
 * before (left by a crash, its pid since given to another process) is not waited for. One whose
 * mover is gone (killed between the move and the put-back) or aged so, that is a live holder's
 * (`live`), is put back over this one's as its mover would have.
 */
export function stillOwn(
  file: string,
  movedAside: RegExp,
  runs: (pid: number) => boolean,
  isOwn: () => boolean,
  live: (aside: string) => boolean,
  way: Pick<LockWay, 'dropCutShort'>,
): boolean {
  putBackOrphans(file, movedAside, runs, live, way)
  const nap = new Int32Array(new SharedArrayBuffer(4))
  for (let waited = 0; waited < ASIDE_MS / 10 && movedAsideByOther(dirname(file), movedAside, runs); waited++) Atomics.wait(nap, 0, 0, 10)
  return isOwn()
}

/**
 * Puts back a live holder's lock that a Burnrate which no longer runs (or not for 10 s: aged) had
 * moved aside to judge it: removed as its leftover (dropLeftovers), the holder would have lost its
 * lock, and this process would have gone on beside it.
 */
function putBackOrphans(file: string, movedAside: RegExp, runs: (pid: number) => boolean, live: (aside: string) => boolean, way: Pick<LockWay, 'dropCutShort'>): void {
  for (const { path: aside, pid, now } of matching(dirname(file), movedAside)) {
    if (pid !== process.pid && runs(pid) && !aged(aside, now)) continue
    let holders: boolean
    try {
      holders = live(aside)
    } catch {
      holders = false
    }
    if (holders) putBack(aside, file, way)
  }
}

/** How long a lock moved aside is waited for: one is judged and put back or removed within milliseconds. */
const ASIDE_MS = 10_000

function movedAsideByOther(dir: string, movedAside: RegExp, runs: (pid: number) => boolean): boolean {
  try {
    const now = folderNow(dir)
    return readdirSync(dir).some((name) => {
      const m = movedAside.exec(name)
      return m !== null && Number(m[1]) !== process.pid && runs(Number(m[1])) && !aged(join(dir, name), now)
    })
  } catch {
    return false
  }
}

/**
 * The folder's clock now: when an entry was last made or removed in it (this process's lock, just
 * made), in the clock of the drive that keeps it (a network share's may differ from this machine's).
 */
function folderNow(dir: string): number {
  return statSync(dir).mtimeMs
}

/**
 * Whether the file at `path` (moved aside or written by a process of its own) is older than a lock
 * is ever kept aside: last changed (a rename, a link or a write) more than ASIDE_MS before `now`
 * (folderNow). Its pid, if it runs, is then another process given that pid after a crash, or one
 * stopped in between (the wait would have given up on it). Gone or unreadable: not aged.
 */
function aged(path: string, now: number): boolean {
  try {
    const st = statSync(path)
    return now - Math.max(st.ctimeMs, st.mtimeMs) > ASIDE_MS
  } catch {
    return false
  }
}

/**
 * Removes what a Burnrate that crashed making a lock or taking one over left in `dir` (its file
 * of its own, a lock it moved aside): the names `pattern` matches, the pid that made them its
 * first group, when that process no longer runs (`runs`), or when what it made is older than such
 * a step ever takes (aged: its pid since given to another process). Another user's, in a folder
 * they share, is left.
 */
export function dropLeftovers(dir: string, pattern: RegExp, runs: (pid: number) => boolean): void {
  for (const { path, pid, now } of matching(dir, pattern)) {
    if ((pid === process.pid || runs(pid)) && !aged(path, now)) continue
    removeQuietly(path)
  }
}

/**
 * The files in `dir` whose names `pattern` matches, each with the pid its first group names and
 * the folder's clock when it was read (folderNow); none when the folder cannot be read.
 */
function matching(dir: string, pattern: RegExp): { path: string; pid: number; now: number }[] {
  let names: string[]
  let now: number
  try {
    names = readdirSync(dir)
    now = folderNow(dir)
  } catch {
    return []
  }
  const found: { path: string; pid: number; now: number }[] = []
  for (const name of names) {
    const m = pattern.exec(name)
    if (m) found.push({ path: join(dir, name), pid: Number(m[1]), now })
  }
  return found
}

/** Writes a new file (never one that is there: EEXIST), private to the user; with `dropCutShort`, one a full disk cut short is removed. */
function writeNew(path: string, text: string | Buffer, dropCutShort: boolean): void {
  const fd = openSync(path, 'wx', 0o600)
  try {
    writeFileSync(fd, text)
  } catch (err) {
    closeSync(fd)
    if (dropCutShort) rmSync(path, { force: true })
    throw err
  }
  closeSync(fd)
}

function removeQuietly(path: string): void {
  try {
    rmSync(path, { force: true })
  } catch {
    // Another user's, in a folder they share, or the folder cannot be written: left.
  }
}
