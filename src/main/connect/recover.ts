import { rmSync } from 'node:fs'
import { otherProcessRuns } from '../server/data-lock'
import { ConnectError } from './errors'
import { readBytes, realTarget, removeEmptyFolders, removeFile, tempName, writeFileKeepingMode } from './files'
import type { ConnectionRecord, Pending, PendingFile, StateStore } from './state'
import { sha256Bytes } from './write'

/**
 * Settles a connect or disconnect that was cut off (a crash or a power cut in ./write.ts
 * writeWork): when no file it changes is still as it was (each holds what it wrote, or was
 * changed by hand since), its records are saved, as it would have done; else each file that
 * holds what it wrote gets its copy from before back (a file never made is removed, with the
 * folders made for it), and the records stay as they were. A file that holds neither was changed
 * by hand since, and is left as it is. Either way the records then name
 * what the files hold, and Disconnect puts back the user's own files. Each step is durable and
 * may be done twice: a crash in here is settled the same way the next time. One that another
 * running Burnrate is making is left to it (a conflict: nothing is written).
 */
export function settlePending(state: StateStore, holds: (pending: Pending, f: PendingFile, now: Buffer | null) => boolean | null = () => null): void {
  const pending = state.pending()
  if (!pending) {
    // The backups a finished change's records no longer name, which a crash kept it from dropping.
    const named = backupsOf(state.read())
    for (const name of state.dropping()) if (!named.has(name)) dropQuietly(state, name)
    return
  }
  // Another Burnrate (the CLI while the app lists the agents) is in the middle of it.
  if (otherProcessRuns(pending.pid, pending.proc_start)) {
    throw new ConnectError('conflict', `Another Burnrate (pid ${pending.pid}) is changing the files of ${pending.agent} right now; try again in a moment (Burnrate wrote nothing).`)
  }
  const files = pending.files.map((f) => ({ f, sha: shaOf(f.path) }))
  for (const { f } of files) rmSync(tempName(realTarget(f.path), pending.pid), { force: true })
  // The files are written in order, so one still as it was means those after it were not
  // written either. One changed by hand since (neither as before nor as written) is taken as
  // written when its keys say so, or do not say: undone, a file that holds Burnrate's keys and
  // the user's edit would be left as it is with no record, the agent pointed at Burnrate for
  // good and its copy from before dropped; kept, its record lets Disconnect take out only
  // Burnrate's keys, and leave it be where it has none.
  const finished = files.every(({ f, sha }) => sha === f.after_sha256 || (sha !== f.before_sha256 && holds(pending, f, bytesOf(f.path)) !== false))
  if (!finished) for (const { f, sha } of [...files].reverse()) putBefore(state, f, sha)
  const current = state.read()
  const kept = finished ? pending.records : current
  state.write(kept)
  const keep = backupsOf(kept)
  const copies = [...backupsOf(finished ? current : pending.records), ...pending.files.flatMap((f) => (f.before ? [f.before] : []))]
  for (const name of copies) if (!keep.has(name)) dropQuietly(state, name)
}

function dropQuietly(state: StateStore, name: string): void {
  try {
    state.dropBackup(name)
  } catch {
    // A leftover copy in the backups folder harms nothing.
  }
}

/** `f` as it was before the change, if it holds what the change wrote (`sha`: its bytes' now, null: no file). */
function putBefore(state: StateStore, f: PendingFile, sha: string | null): void {
  if (sha === f.before_sha256) {
    // Not written yet; the folders made for a file that was to be made go.
    if (sha === null) removeEmptyFolders(f.folders ?? [])
    return
  }
  if (sha !== f.after_sha256) return
  if (f.before === null) {
    removeFile(f.path)
    removeEmptyFolders(f.folders ?? [])
    return
  }
  const bytes = state.readBackupBytes(f.before)
  // A copy that is not the file as it was (another file's) must not be written over it.
  if (bytes === null || sha256Bytes(bytes) !== f.before_sha256) {
    throw new ConnectError('unreadable', `${f.path} was being changed by Burnrate when it stopped, and its copy from before (${f.before}) cannot be read; nothing was written.`, f.path)
  }
  writeFileKeepingMode(f.path, bytes)
}

function shaOf(path: string): string | null {
  const bytes = bytesOf(path)
  return bytes === null ? null : sha256Bytes(bytes)
}

/**
 * The file's bytes (null: no file). A named pipe put there since (a secrets manager's mounted
 * .env) is not opened (./files.ts readBytes): the read would take the delivery meant for the agent,
 * or wait for good on the main thread; it throws, and the change stays pending until it can be read.
 */
function bytesOf(path: string): Buffer | null {
  return readBytes(realTarget(path))
}

function backupsOf(records: Record<string, ConnectionRecord>): Set<string> {
  return new Set(Object.values(records).flatMap((r) => r.files.flatMap((f) => [f.backup, f.written_copy].filter((n): n is string => !!n))))
}
