import { closeSync, fsyncSync, openSync, readdirSync, readFileSync, renameSync, rmSync, writeSync } from 'node:fs'
import { join } from 'node:path'
import type { CallRecord } from '../ledger/record'
import { untrustedReason } from '../security/owned-file'
import type { Feature } from '../server/context'

/**
 * Calls still waiting for an unwritable database when Burnrate stops (locked, full, read-only)
 * are not lost with the process: they are written to `ledger-spill-<ms>.jsonl` in the data folder
 * (one call per line, the same fields as the `calls` table: key hashes, never keys), and put into
 * the database at the next start.
 */
const PREFIX = 'ledger-spill-'

export function spillFiles(dataDir: string): string[] {
  try {
    return readdirSync(dataDir)
      .filter((f) => f.startsWith(PREFIX) && f.endsWith('.jsonl'))
      .sort()
      .map((f) => join(dataDir, f))
  } catch {
    return []
  }
}

/** The name of a spill file started at `now` (ms). */
export function spillFile(dataDir: string, now: number): string {
  return join(dataDir, `${PREFIX}${now}.jsonl`)
}

/**
 * A spill file could take only its first `kept` calls (the disk filled up): they are on disk and
 * put into the database at the next start; the others are lost.
 */
export class SpillCut extends Error {
  constructor(
    readonly file: string,
    readonly kept: number,
    cause: unknown,
  ) {
    super(`${(cause as NodeJS.ErrnoException)?.code ?? (cause as Error)?.message ?? cause}`, { cause })
  }
}

/**
 * Writes `rows` to a new spill file, synced to disk. Throws when it cannot; a `SpillCut` when the
 * file took only some of them (the file is kept: its whole lines are calls saved).
 */
export function writeSpill(dataDir: string, rows: readonly CallRecord[], now = Date.now()): string {
  const file = spillFile(dataDir, now)
  writeRows(file, rows, 'wx')
  return file
}

/**
 * Replaces a spill file's calls with `rows` (those still to be written), through a temporary
 * file renamed over it: a crash meanwhile leaves the old file or the new one, never half of one.
 */
export function rewriteSpill(file: string, rows: readonly CallRecord[]): void {
  const tmp = `${file}.tmp`
  try {
    writeRows(tmp, rows, 'w')
    renameSync(tmp, file)
  } catch (err) {
    rmSync(tmp, { force: true })
    throw err
  }
}

/**
 * Writes every byte: a write to a nearly full disk may take only part of what it is given without
 * an error (the next one then fails with ENOSPC), and a file cut there would hold only its first
 * calls while the log said all were kept. Throws a SpillCut naming the whole lines written.
 */
function writeRows(file: string, rows: readonly CallRecord[], flags: string): void {
  const buf = Buffer.from(rows.map((r) => JSON.stringify(r)).join('\n') + '\n', 'utf8')
  const fd = openSync(file, flags, 0o600)
  let off = 0
  try {
    while (off < buf.length) off += writeSync(fd, buf, off, buf.length - off)
    fsyncSync(fd)
  } catch (err) {
    try {
      fsyncSync(fd)
    } catch {}
    throw new SpillCut(file, wholeLines(buf, off), err)
  } finally {
    closeSync(fd)
  }
}

/** How many lines end (with their newline) in the first `n` bytes of `buf`. */
function wholeLines(buf: Buffer, n: number): number {
  let lines = 0
  for (let i = buf.indexOf(10); i !== -1 && i < n; i = buf.indexOf(10, i + 1)) lines++
  return lines
}

/** The calls in a spill file; a torn last line (a crash while writing) is skipped. */
export function readSpill(file: string): CallRecord[] {
  return parseSpill(readFileSync(file, 'utf8'))
}

/** The calls in a spill file's text (see readSpill). */
export function parseSpill(text: string): CallRecord[] {
  const out: CallRecord[] = []
  for (const line of text.split('\n')) {
    if (!line.trim()) continue
    try {
      const r = JSON.parse(line)
      if (r && typeof r === 'object' && typeof r.ts === 'number') out.push(r as CallRecord)
    } catch {}
  }
  return out
}

export const ledgerSpill: Feature = (ctx) => {
  // The PostgreSQL ledger spills while the database is away and writes the files back itself.
  if (ctx.ledger.kind !== 'sqlite') return
  const dir = ctx.config.data_dir
  for (const file of spillFiles(dir)) {
    // Only Burnrate's own (this user's): in a shared folder another user could plant forged calls.
    let rows: CallRecord[]
    try {
      const untrusted = untrustedReason(file)
      if (untrusted) {
        ctx.log.warn(`${file} is not read: ${untrusted}`)
        continue
      }
      rows = readSpill(file)
    } catch (err) {
      ctx.log.warn(`${file} cannot be read (${(err as NodeJS.ErrnoException).code ?? err}); it stays for the next start`)
      continue
    }
    // In chunks of at most ledger.max_pending, each written before the next is queued: past that
    // bound the ledger drops its oldest queued calls (a file from a run with a larger bound, or
    // from a stop whose queue had outgrown it, would lose the rest and then be removed).
    // Written now (before the other features read the database at start-up), and only then is
    // the file removed.
    const chunk = ctx.config.ledger.max_pending
    let next = 0
    let ok = true
    while (ok && next < rows.length) {
      for (const r of rows.slice(next, next + chunk)) ctx.ledger.record(r)
      next = Math.min(next + chunk, rows.length)
      ok = ctx.ledger.flush()
    }
    if (ok) {
      try {
        rmSync(file, { force: true })
      } catch (err) {
        ctx.log.warn(`${file} could not be removed (${(err as NodeJS.ErrnoException).code ?? err}): its calls are recorded; remove it, or they are recorded again at the next start`)
      }
      ctx.log.info(`recovered ${rows.length} call(s) kept in ${file} while the database could not be written`)
      continue
    }
    // Still unwritable: the calls not yet stored (those still queued, and those never queued)
    // stay in the file for the next start, and leave the queue so that they are not written
    // twice; the stored ones leave the file, for the same reason. Their spend counts meanwhile.
    const unqueued = rows.slice(next)
    for (const r of unqueued) ctx.ledger.spend.addCall(r)
    const rest = ctx.ledger.takePending().concat(unqueued)
    const stored = rows.length - rest.length
    if (stored > 0) {
      try {
        rewriteSpill(file, rest)
      } catch (err) {
        ctx.log.warn(`${file} could not be rewritten (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}): ${stored} of its calls are recorded, and are recorded again at the next start`)
      }
    }
    const done = stored > 0 ? `${stored} of its call(s) are recovered; ` : ''
    ctx.log.warn(`the database still cannot be written; ${done}${rest.length} call(s) stay in ${file} for the next start`)
  }
  ctx.onClose(() => {
    if (ctx.ledger.flush()) return
    const rows = ctx.ledger.takePending()
    if (rows.length === 0) return
    try {
      const file = writeSpill(dir, rows)
      ctx.log.warn(`the database cannot be written (${ctx.ledger.status.last_error}); ${rows.length} call(s) kept in ${file} until the next start`)
    } catch (err) {
      const kept = err instanceof SpillCut ? err.kept : 0
      if (kept > 0) ctx.log.warn(`the database cannot be written (${ctx.ledger.status.last_error}); ${kept} call(s) kept in ${(err as SpillCut).file} until the next start`)
      ctx.log.error(`${rows.length - kept} call(s) could not be saved anywhere: ${(err as Error).message}`)
    }
  })
}
