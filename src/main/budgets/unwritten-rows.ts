import type { SideWrite } from '../ledger/side-writes'
import type { Logger } from '../log'
import { writeSpill } from '../reliability/spill-file'

/** Rows kept in this instance's own SQLite file that it may not have taken yet (PostgreSQL: ./background-holds.ts, ./key-patterns.ts). */
export interface UnwrittenRows {
  /** Writes what waits; what the file cannot take now stays. */
  flush(): void
  /** Hands over what still waits, and forgets it. */
  takePending(): SideWrite[]
}

/**
 * At a stop (or an exit that cannot wait) on PostgreSQL: the budget holds and key patterns its own
 * SQLite file could not take (another connection holding it: `burnrate import`, a backup) are
 * tried once more, and what still waits is kept in a spill file of the data folder (private, as
 * the ledger's), whose rows the next start writes to the file before anything reads them
 * (../storage/spilled-side.ts). Builds before this one lost them with the process: after the
 * restart a running job's reservation no longer held, and a second job passed the `block` rule.
 */
export function keepUnwritten(stores: readonly UnwrittenRows[], dataDir: string, log: Logger): void {
  const side: SideWrite[] = []
  for (const s of stores) {
    s.flush()
    side.push(...s.takePending())
  }
  if (side.length === 0) return
  try {
    const file = writeSpill(dataDir, [], Date.now(), side)
    log.warn(`this instance's own database file is busy; ${side.length} row(s) (budget holds, key patterns) kept in ${file} until the next start`)
  } catch (err) {
    log.error(`${side.length} row(s) (budget holds, key patterns) could not be saved anywhere: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`)
  }
}
