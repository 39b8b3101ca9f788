import { rmSync } from 'node:fs'
import { keysFromFile } from '../ledger/call-keys'
import type { Ledger } from '../ledger/ledger'
import type { CallRecord } from '../ledger/record'
import type { SideWrite } from '../ledger/side-writes'
import type { Logger } from '../log'
import { untrustedReason } from '../security/owned-file'
import type { Feature, ServerContext } from '../server/context'
import { SpillCut, type Spilled, readSpilled, removeStrayTemps, rewriteSpill, spillFiles, writeSpill } from './spill-file'

export { SpillCut, parseSpill, parseSpilled, readSpill, readSpilled, rewriteSpill, spillFile, spillFiles, wholeLines, writeSpill, type Spilled } from './spill-file'

/**
 * Calls still waiting for an unwritable database when Burnrate stops (locked, full, read-only)
 * are not lost with the process: they are written to a spill file in the data folder
 * (./spill-file.ts), with the budget holds and key patterns kept with them, and put into the
 * database at the next start; when it still cannot be written then, as soon as it can (the
 * ledger keeps them waiting ahead of its queue: ../ledger/restored.ts).
 */
export const ledgerSpill: Feature = (ctx) => {
  // A crash inside a rewrite left its temporary file (the spill file beside it is whole): it goes.
  for (const tmp of removeStrayTemps(ctx.config.data_dir, (f) => untrustedReason(f) === null)) ctx.log.info(`removed ${tmp}, left by a rewrite a crash cut short (its spill file holds its calls)`)
  // The PostgreSQL ledger spills while the database is away and writes the files back itself.
  if (ctx.ledger.kind !== 'sqlite') return
  const dir = ctx.config.data_dir
  // A call in two files (a journal kept while the database could not be written, and the spill
  // file of the stop that followed, when an append was under way at it) is taken from the first.
  const seen = new Set<string>()
  for (const file of spillFiles(dir)) {
    // Only Burnrate's own (this user's): in a shared folder another user could plant forged calls.
    let spilled: Spilled
    try {
      const untrusted = untrustedReason(file)
      if (untrusted) {
        ctx.log.warn(`${file} is not read: ${untrusted}`)
        continue
      }
      spilled = readSpilled(file)
    } catch (err) {
      ctx.log.warn(`${file} cannot be read (${(err as NodeJS.ErrnoException).code ?? err}); it stays for the next start`)
      continue
    }
    const { side } = spilled
    const ledger = ctx.ledger as Ledger
    // Calls already stored are not recorded again: a process killed after their replay committed
    // and before it removed (or rewrote) the file left them in it. Each is known by its key (a file
    // from before keys: by its name and line, as the replay that stored them gave them).
    keysFromFile(file, spilled.rows)
    let rows = spilled.rows.filter((r) => !seen.has(r.call_key!))
    for (const r of rows) seen.add(r.call_key!)
    try {
      rows = ledger.notStored(rows)
    } catch (err) {
      // The keys still keep each call to one row; only the spend counted now could count one twice.
      ctx.log.warn(`cannot look up which calls of ${file} are recorded already (${(err as NodeJS.ErrnoException).code ?? err}); each is stored once, but today's spend may count one twice until the next start`)
    }
    if (rows.length < spilled.rows.length) {
      ctx.log.info(`${spilled.rows.length - rows.length} call(s) in ${file} were already recorded (a stop right after they were written left the file): they are not recorded again`)
    }
    // In chunks of at most ledger.max_pending, each written before the next is queued: past that
    // bound the ledger drops its oldest queued calls (a file from a run with a larger bound, or
    // from a stop whose queue had outgrown it, would lose the rest and then be removed).
    // Written now (before the other features read the database at start-up), and only then is
    // the file removed.
    // The holds and key patterns go with the first chunk's transaction.
    if (side.length > 0) ledger.keepWithNextBatch(side)
    const chunk = ctx.config.ledger.max_pending
    let next = 0
    let ok = side.length === 0 || ledger.flush()
    while (ok && next < rows.length) {
      for (const r of rows.slice(next, next + chunk)) ctx.ledger.record(r)
      next = Math.min(next + chunk, rows.length)
      ok = ctx.ledger.flush()
    }
    if (ok) {
      removeSpill(ctx, file, `recovered ${rows.length} call(s)${others(side.length)} kept in ${file} while the database could not be written`)
      continue
    }
    // Still unwritable: the calls not yet stored (those still queued, and those never queued) and
    // the side rows stay in the file, and wait in the ledger, ahead of what is recorded from now
    // on: written at its first write that succeeds (the database free again), and the file removed
    // then. Meanwhile their spend counts (here, and in the budget meters: `Ledger.unwritten`), and
    // the background holds among them hold. The stored ones leave the file, not to be written twice.
    const unqueued = rows.slice(next)
    for (const r of unqueued) ctx.ledger.spend.addCall(r)
    const rest = ctx.ledger.takePending().concat(unqueued)
    // Side rows not yet stored are still kept (with the first chunk, or on their own before it).
    const restSide = side.length > 0 ? ledger.takeSide() : []
    const stored = rows.length - rest.length
    if (stored > 0 || restSide.length < side.length) keepRest(ctx, file, rest, restSide, stored)
    // Written in part later (a row refused for itself, then the database failing again): the file is rewritten then too.
    ledger.restore(
      rest,
      restSide,
      () => removeSpill(ctx, file, `recovered ${rest.length} call(s)${others(restSide.length)} kept in ${file}, once the database could be written`),
      (left, leftSide) => keepRest(ctx, file, left, leftSide, rest.length - left.length),
    )
    const done = stored > 0 ? `${stored} of its call(s) are recovered; ` : ''
    ctx.log.warn(`the database still cannot be written; ${done}${rest.length} call(s) stay in ${file} until it can (they count in the budgets meanwhile)`)
  }
  // (What is still queued at the stop is kept by the server, after the ledger's last flush: `keepPending`.)
}

const others = (n: number) => (n > 0 ? ` and ${n} other row(s) (budget holds, key patterns)` : '')

/** Rewrites a spill file to hold only what is still to be stored (`stored` of its calls are). */
function keepRest(ctx: ServerContext, file: string, rows: CallRecord[], side: SideWrite[], stored: number): void {
  try {
    rewriteSpill(file, rows, side)
  } catch (err) {
    // Its calls carry their keys: those recorded are not recorded again at the next start.
    ctx.log.warn(`${file} could not be rewritten (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}): ${stored} of its calls are recorded; the next start skips them`)
  }
}

/** Removes a spill file whose rows are all stored, and says so. */
function removeSpill(ctx: ServerContext, file: string, done: string): void {
  try {
    rmSync(file, { force: true })
  } catch (err) {
    ctx.log.warn(`${file} could not be removed (${(err as NodeJS.ErrnoException).code ?? err}): its calls are recorded (the next start finds them so and does not record them again); remove it`)
  }
  ctx.log.info(done)
}

/**
 * Writes what `ledger` has queued, or, when the database cannot take it (locked, full,
 * read-only), keeps it in a new spill file for the next start: the calls, and the rows written
 * with them (a background job's budget hold, which would let a second job past a block rule
 * after the restart if it were lost). Synchronous: it is also what an exit that cannot wait runs.
 */
export function keepPending(ledger: Ledger, dataDir: string, log: Logger, opts: { flushFirst?: boolean } = {}): void {
  if (opts.flushFirst !== false && ledger.flush()) return
  const rows = ledger.takePending()
  const side = ledger.takeSide()
  if (rows.length === 0 && side.length === 0) return
  const why = `the database cannot be written (${ledger.status.last_error})`
  try {
    const file = writeSpill(dataDir, rows, Date.now(), side)
    // Every call the journal kept while writes failed is in this file too (../ledger/journal.ts).
    ledger.dropJournal()
    log.warn(`${why}; ${rows.length} call(s)${others(side.length)} kept in ${file} until the next start`)
  } catch (err) {
    // A cut file holds its first rows whole: the side rows (written first), then calls.
    const cut = err instanceof SpillCut ? err : null
    const kept = cut?.kept ?? 0
    const keptSide = cut?.keptSide ?? 0
    if (kept > 0 || keptSide > 0) log.warn(`${why}; ${kept} call(s)${others(keptSide)} kept in ${cut!.file} until the next start`)
    // Those the journal kept while writes failed are on disk there (../ledger/journal.ts).
    const journal = ledger.inJournal(rows.slice(kept), side.slice(keptSide))
    if (journal.count > 0 || journal.side > 0) log.warn(`${why}; ${journal.count} call(s)${others(journal.side)} kept in ${journal.file} until the next start`)
    // The side rows lost are named too (a background job's budget hold: a second job could pass a
    // block rule after the restart); builds before this one left those of a cut file out of the
    // log, and said nothing at all when no call was lost with them.
    const lost = rows.length - kept - journal.count
    const lostSide = side.length - keptSide - journal.side
    if (lost > 0 || lostSide > 0) log.error(`${lost} call(s)${others(lostSide)} could not be saved anywhere: ${(err as Error).message}`)
  }
}
