import { closeSync, fsyncSync, openSync, readdirSync, readFileSync, rmSync, writeSync } from 'node:fs'
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

/** Writes `rows` to a new spill file, synced to disk. Throws when it cannot. */
export function writeSpill(dataDir: string, rows: readonly CallRecord[], now = Date.now()): string {
  const file = spillFile(dataDir, now)
  const fd = openSync(file, 'wx', 0o600)
  try {
    writeSync(fd, rows.map((r) => JSON.stringify(r)).join('\n') + '\n')
    fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
  return file
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
    for (const r of rows) ctx.ledger.record(r)
    // Written now (before the other features read the database at start-up), and only then is
    // the file removed. Still unwritable: the file stays for the next start, and the rows leave
    // the queue so that they are not written twice (their spend counts meanwhile).
    if (ctx.ledger.flush()) {
      try {
        rmSync(file, { force: true })
      } catch (err) {
        ctx.log.warn(`${file} could not be removed (${(err as NodeJS.ErrnoException).code ?? err}): its calls are recorded; remove it, or they are recorded again at the next start`)
      }
      ctx.log.info(`recovered ${rows.length} call(s) kept in ${file} while the database could not be written`)
    } else {
      ctx.ledger.takePending()
      ctx.log.warn(`the database still cannot be written; ${rows.length} call(s) stay in ${file} for the next start`)
    }
  }
  ctx.onClose(() => {
    if (ctx.ledger.flush()) return
    const rows = ctx.ledger.takePending()
    if (rows.length === 0) return
    try {
      const file = writeSpill(dir, rows)
      ctx.log.warn(`the database cannot be written (${ctx.ledger.status.last_error}); ${rows.length} call(s) kept in ${file} until the next start`)
    } catch (err) {
      ctx.log.error(`${rows.length} call(s) could not be saved anywhere: ${(err as Error).message}`)
    }
  })
}
