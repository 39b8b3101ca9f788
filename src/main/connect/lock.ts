import { closeSync, existsSync, openSync, readFileSync, rmSync, statSync, writeSync } from 'node:fs'
import { join } from 'node:path'
import { otherProcessRuns, processStart } from '../server/data-lock'
import { untrustedIfThere } from '../security/owned-file'
import { ConnectError } from './errors'
import { makeFolders } from './files'

export const LOCK_FILE = 'agent-connections.lock'

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
    let fd: number
    try {
      if (opts.create) makeFolders(dataDir)
      fd = openSync(file, 'wx', 0o600)
    } catch (err) {
      const e = err as NodeJS.ErrnoException
      if (e.code !== 'EEXIST' || attempt >= 3) {
        throw lockFailed(file, e)
      }
      const holder = readHolder(file)
      if (holder && otherProcessRuns(holder.pid, holder.proc_start)) {
        throw new ConnectError('conflict', `Another Burnrate (pid ${holder.pid}) is connecting or disconnecting an agent right now; try again in a moment (Burnrate wrote nothing; if no Burnrate runs, delete ${file}).`)
      }
      // Only the user's own lock dates what a crash left: in a data folder other users may write,
      // one they planted (dated as they like) would have every backup, or whatever their link
      // under agent-backups/ points to, taken for a crash's leftovers and deleted (./state.ts dropUnnamed).
      try {
        if (untrustedIfThere(file) === null) crashed = Math.min(crashed ?? Infinity, statSync(file).mtimeMs)
      } catch {
        // Gone meanwhile.
      }
      rmSync(file, { force: true })
      continue
    }
    try {
      writeSync(fd, body)
    } catch (err) {
      // A full disk: an empty lock would be taken over as a crash's.
      rmSync(file, { force: true })
      throw lockFailed(file, err as NodeJS.ErrnoException)
    } finally {
      closeSync(fd)
    }
    break
  }
  try {
    return fn(crashed)
  } finally {
    if (readHolder(file)?.pid === process.pid) rmSync(file, { force: true })
  }
}

function lockFailed(file: string, err: NodeJS.ErrnoException): ConnectError {
  return new ConnectError('not_saved', `Burnrate could not take its lock ${file} in its data folder (${err.code ?? err.message}); Burnrate wrote nothing.`)
}

function readHolder(file: string): { pid: number; proc_start?: string } | null {
  try {
    const v = JSON.parse(readFileSync(file, 'utf8')) as { pid?: unknown; proc_start?: string }
    return typeof v.pid === 'number' && Number.isInteger(v.pid) && v.pid > 0 ? { pid: v.pid, proc_start: v.proc_start } : null
  } catch {
    return null
  }
}
