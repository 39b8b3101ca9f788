import type Database from 'better-sqlite3'
import { sideWriter } from '../ledger/side-writes'
import type { Logger } from '../log'
import { readSpilled, readSpilledSide, rewriteSpill, spillFiles } from '../reliability/spill-file'
import { untrustedIfThere } from '../security/owned-file'

/**
 * At a start on PostgreSQL, the rows other than calls in the SQLite ledger's spill files (a data
 * folder switched to `storage.url` while one waited: ../ledger/side-writes.ts, a background job's
 * budget hold, a key's rule patterns, a budget threshold announced) are written to this instance's
 * own SQLite file, where the PostgreSQL instance keeps its holds and patterns and its own copy of
 * the thresholds it announced (../budgets/announced.ts `PgAnnounced`, which writes them to
 * PostgreSQL with its first load). Before the features read them, and before the PostgreSQL ledger
 * writes the files' calls (../ledger/pg/spill.ts, which removes a file only once no side row is
 * left in it). The file is then rewritten with its calls only; one that cannot be is left whole
 * (its side rows are written again at the next start: each write is idempotent). Builds before
 * this one dropped them; and ones before the next, when the file here was busy at start-up.
 */
export function writeSpilledSide(db: Database.Database, dataDir: string, log: Logger): void {
  for (const file of spillFiles(dataDir)) {
    // Not Burnrate's own: the PostgreSQL ledger says so, and reads nothing of it either.
    if (untrustedIfThere(file)) continue
    // Its side rows alone first: a PostgreSQL instance's own file (calls only) can be far larger
    // than memory, and is not held whole for nothing here.
    let side
    try {
      side = readSpilledSide(file)
    } catch {
      continue
    }
    if (side.length === 0) continue
    try {
      const write = sideWriter(db)
      db.transaction(() => write(side))()
    } catch (err) {
      log.warn(`the budget holds, key patterns and thresholds announced kept in ${file} cannot be written to ${db.name} now (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}); they stay in it for the next start`)
      continue
    }
    try {
      // (A file with side rows is a SQLite ledger's: its calls are read whole to write them back.)
      rewriteSpill(file, readSpilled(file).rows)
    } catch {
      // Left whole: written again at the next start, to the same effect.
    }
    log.info(`wrote the ${side.length} row(s) (budget holds, key patterns, thresholds announced) kept in ${file} to ${db.name}`)
  }
}
