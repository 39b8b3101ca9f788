import type { ConnectPlan, PlannedFileChange } from '../../shared/connect'
import { createHash } from 'node:crypto'
import { ConnectError } from './errors'
import { checkWritable, missingFolders, readBytes, removeEmptyFolders, removeFile, writeFileKeepingMode } from './files'
import { processStart } from '../server/data-lock'
import { tildify } from './paths'
import type { ConnectionRecord, FileRecord, PendingFile, StateStore } from './state'
import type { AgentConnector, AgentFile, ConnectContext } from './types'

/** Where a connection's writes go: the agent's files (shown relative to its home), and Burnrate's backups and records. */
export interface Writer {
  ctx: ConnectContext
  state: StateStore
  now: () => Date
}

/** What one planned file write is, with what the state record needs to know about it. */
export interface FileWork {
  file: AgentFile
  before: string | null
  /** null: remove the file. */
  after: string | null
  record: FileRecord | null
  settings: PlannedFileChange['settings']
  /** The file without Burnrate, as it is now: the new backup when the user edited it since Burnrate wrote it. */
  rebased?: string
  /** Folders Burnrate made for the file: removed after it (`after` null) when left empty. */
  folders?: string[]
  /** `before` and `after` are the file's bytes one a character (a file that is not UTF-8, put back: ./restore.ts). */
  encoding?: 'latin1'
}

type Records = Record<string, ConnectionRecord>

export const sha256Bytes = (b: Buffer): string => createHash('sha256').update(b).digest('hex')

export interface Work {
  plan: ConnectPlan
  files: FileWork[]
}

/**
 * Checks every file first, then saves the backups, then the records as they are with this change
 * as pending (the new records, and a copy and a checksum of each file before and after), then
 * writes the files, then the new records (naming the backups they no longer need, `obsolete` among
 * them, which are dropped after). Each write replaces its file whole and is on the disk
 * before the next starts (./files.ts writeDurably), so a crash at any point leaves a pending change
 * that the next connect or disconnect finishes or undoes (./recover.ts): an agent file is never
 * changed without a record Disconnect can undo it by. A refused file means nothing was written; a
 * write or a record that fails puts the written files back, the same way.
 */
export function writeWork(to: Writer, c: AgentConnector, work: Work, records: Records, change: (records: Records) => void, obsolete: string[] = []): void {
  const changing = work.files.filter((w) => w.after !== w.before)
  for (const w of changing) {
    const problem = checkWritable(w.file.path)
    if (problem) throw new ConnectError('read_only', `${tildify(to.ctx, w.file.path)} ${problem}; Burnrate wrote nothing.`, w.file.path)
  }
  /** Backups made now: dropped again when this fails. */
  const made: string[] = []
  /** Backups the new record no longer names: dropped once it is saved. */
  const stale: string[] = []
  const save = (path: string, text: string | Buffer, replaces: string | null): string => {
    const name = to.state.saveBackup(c.id, path, text, to.now())
    made.push(name)
    if (replaces && replaces !== name) stale.push(replaces)
    return name
  }
  const pending: PendingFile[] = []
  /** Whether the pending change may be in the records file (then it is taken out again, or kept while a file is not put back). */
  let journaled = false
  const failed = (err: unknown, written: FileWork[]): ConnectError => {
    const notPutBack = putBack(to, written, pending)
    // The pending change is taken out of the records file again; it stays there, with the copies
    // and backups it names, while a file is not as it was (recover.ts puts it back next time).
    let settled = !journaled
    if (journaled && notPutBack.length === 0) {
      try {
        to.state.write(records)
        settled = true
      } catch {
        // Kept: every file is as it was, which recover.ts finds.
      }
    }
    if (settled) for (const name of made) dropQuietly(to, name)
    const e = err as NodeJS.ErrnoException
    const what = err instanceof ConnectError ? err.message.replace(/\.$/, '') : `Burnrate could not save its backup or record of this in its data folder (${e.code ?? e.message})`
    const after = written.length === 0 ? 'Burnrate wrote nothing' : notPutBack.length === 0 ? 'the files Burnrate had written were put back as they were' : `${notPutBack.join(', ')} could not be put back as it was`
    return new ConnectError(err instanceof ConnectError ? err.code : 'not_saved', `${what}; ${after}.`, err instanceof ConnectError ? err.file : null)
  }
  let next: Records
  let drop: string[]
  try {
    for (const w of work.files) {
      if (w.record && w.rebased !== undefined) {
        w.record.backup = save(w.file.path, w.rebased, w.record.backup)
        w.record.existed = true
      } else if (w.record && w.record.existed && !w.record.backup && w.before !== null) {
        w.record.backup = save(w.file.path, w.before, null)
      }
    }
    for (const w of changing) {
      const before = w.before === null ? null : Buffer.from(w.before, w.encoding ?? 'utf8')
      const folders = w.after === null ? [] : missingFolders(w.file.path)
      if (w.record && w.after !== null) {
        w.record.written_copy = save(`${w.file.path}.written`, w.after, w.record.written_copy)
        if (folders.length > 0) w.record.created_dirs = folders
      }
      pending.push({
        path: w.file.path,
        before: before === null ? null : save(`${w.file.path}.before`, before, null),
        before_sha256: before === null ? null : sha256Bytes(before),
        after_sha256: w.after === null ? null : sha256Bytes(Buffer.from(w.after, w.encoding ?? 'utf8')),
        ...(folders.length > 0 ? { folders } : {}),
      })
    }
    next = structuredClone(records)
    change(next)
    drop = [...stale, ...pending.flatMap((p) => (p.before ? [p.before] : [])), ...obsolete]
    journaled = pending.length > 0
    if (journaled) to.state.write(records, { agent: c.id, pid: process.pid, proc_start: processStart(process.pid) ?? undefined, records: next, files: pending })
  } catch (err) {
    throw failed(err, [])
  }
  const written: FileWork[] = []
  try {
    for (const w of changing) {
      // Saved meanwhile (the agent writing an "always allow" rule while the backups were synced):
      // replacing it with the edit of what was read would lose that save. Checked again once the
      // edit is on the disk beside it, right before it replaces the file: a save while it was
      // synced (a while, on a busy disk) would be lost the same way.
      const savedMeanwhile = (): void => {
        if (!holdsBefore(w)) throw new ConnectError('conflict', `${tildify(to.ctx, w.file.path)} changed while Burnrate was writing it (the agent or an editor saved it just then)`, w.file.path)
      }
      savedMeanwhile()
      try {
        if (w.after === null) {
          removeFile(w.file.path)
          removeEmptyFolders(w.folders ?? [])
        } else {
          writeFileKeepingMode(w.file.path, w.after, w.encoding, savedMeanwhile)
        }
      } catch (err) {
        if (err instanceof ConnectError) throw err
        const e = err as NodeJS.ErrnoException
        throw new ConnectError('read_only', `Cannot write ${tildify(to.ctx, w.file.path)} (${e.code ?? e.message}).`, w.file.path)
      }
      written.push(w)
    }
    // With the backups the new records no longer name: a crash before they are dropped leaves
    // them named here, and the next connect or disconnect drops them (./recover.ts).
    to.state.write(next, undefined, drop)
  } catch (err) {
    throw failed(err, written)
  }
  for (const name of drop) dropQuietly(to, name)
}

/** Whether the file still holds the bytes the change was made from (`before`; null: no file). */
function holdsBefore(w: FileWork): boolean {
  let now: Buffer | null
  try {
    now = readBytes(w.file.path)
  } catch {
    return false
  }
  return w.before === null ? now === null : now !== null && now.equals(Buffer.from(w.before, w.encoding ?? 'utf8'))
}

/** Writes `before` back to each written file; the ones that could not be, as shown. */
function putBack(to: Writer, written: FileWork[], pending: PendingFile[]): string[] {
  const failed: string[] = []
  for (const w of [...written].reverse()) {
    try {
      if (w.before === null) {
        removeFile(w.file.path)
        removeEmptyFolders(pending.find((p) => p.path === w.file.path)?.folders ?? [])
      } else writeFileKeepingMode(w.file.path, w.before, w.encoding)
    } catch {
      failed.push(tildify(to.ctx, w.file.path))
    }
  }
  return failed
}

function dropQuietly(to: Writer, name: string): void {
  try {
    to.state.dropBackup(name)
  } catch {
    // A leftover copy in the backups folder harms nothing.
  }
}
