import { Ledger } from '../ledger/ledger'
import type { CallLedger } from '../ledger/types'
import type { Logger } from '../log'

/** How long a clean stop waits for the spill journal's file work (an open or a removal under way). */
const JOURNAL_IDLE_MS = 5_000

/**
 * A clean stop returns once the journal's file work is done: nothing is created or removed in the
 * data folder after it. Waited on for at most JOURNAL_IDLE_MS: a file operation a stuck disk never
 * ends (a hung network mount) must not hold the quit up for good; what it leaves is read once at the next start.
 */
export async function journalIdle(ledger: CallLedger, log: Logger): Promise<void> {
  if (!(ledger instanceof Ledger)) return
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), JOURNAL_IDLE_MS)))
  const done = await Promise.race([ledger.journalIdle().then(() => 'done' as const), late])
  clearTimeout(timer)
  if (done === 'late') log.warn(`the spill journal's file work had not ended ${JOURNAL_IDLE_MS / 1000} s after the stop; stopping without it (the next start reads what it left once)`)
}
