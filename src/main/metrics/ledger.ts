import { Counter, Gauge, type Registry } from 'prom-client'
import { ingestedSpend } from '../dashboard/budgets'
import type { ServerContext } from '../server/context'
import { READ_WAIT_MS, within } from './wait'

/**
 * Ledger health and spend, read at scrape time from the ledger's status and in-memory spend. On a
 * team server (`team.members`) the spend adds the calls its members sent (ingested), which the
 * in-memory spend leaves out (budgets are not run on them) while every dashboard total counts
 * them: read from the rollups as the budgets panel's `overall` reads them.
 */
export function ledgerGauges(registry: Registry, ctx: Pick<ServerContext, 'ledger' | 'store' | 'config'>): void {
  const registers = [registry]
  const ledger = ctx.ledger
  const teamServer = ctx.config.team.members.length > 0
  new Gauge({
    name: 'burnrate_ledger_pending',
    help: 'Recorded calls not yet written to the database.',
    registers,
    collect() {
      this.set(ledger.status.pending)
    },
  })
  new Counter({
    name: 'burnrate_ledger_dropped_total',
    help: 'Calls dropped and never recorded: more than ledger.max_pending waited while the database stayed unwritable and the disk could not keep them either, or the database refused the row.',
    registers,
    collect() {
      this.reset()
      this.inc(ledger.status.dropped)
    },
  })
  // Never down (a counter that fell would read as a restart to rate()): the ledger's total counts a
  // call held by a journal append under way only once that append has put it on disk, so it does
  // not fall; the highest value read is kept all the same.
  let leftOnDisk = 0
  new Counter({
    name: 'burnrate_ledger_left_on_disk_total',
    help: 'Calls that left memory past ledger.max_pending while the database stayed unwritable but were on disk in the spill journal: not lost (stored at the next start, or on PostgreSQL once it answers again), and not in dropped. Counts them stored since or not; burnrate_ledger_left_on_disk_waiting counts those not stored yet.',
    registers,
    collect() {
      leftOnDisk = Math.max(leftOnDisk, ledger.status.left_on_disk_total ?? 0)
      this.reset()
      this.inc(leftOnDisk)
    },
  })
  new Gauge({
    name: 'burnrate_ledger_left_on_disk_waiting',
    help: "Calls that left memory past ledger.max_pending and wait on disk in the spill journal to be stored (SQLite: at the next start; PostgreSQL: once it answers again): /api/health's ledger.left_on_disk.",
    registers,
    collect() {
      this.set(ledger.status.left_on_disk ?? 0)
    },
  })
  new Gauge({
    name: 'burnrate_ledger_writable',
    help: '1 while the database takes writes, 0 while it cannot (SQLite locked, full or read-only; PostgreSQL away, or not answering a write).',
    registers,
    collect() {
      this.set(ledger.status.writable ? 1 : 0)
    },
  })
  new Gauge({
    name: 'burnrate_spend_usd',
    help: "Spend of every call today and this month (in the configured timezone), in US dollars, from the ledger's in-memory counters (on a team server with its members' calls).",
    labelNames: ['period'],
    registers,
    async collect() {
      this.reset()
      // PostgreSQL: the stored calls' spend is read once the database is ready, without holding up
      // start-up; a scrape before then waits a moment for it, and has no sample rather than one
      // that says only this process's calls since it started ($0 at a restart).
      if (!ledger.spend.loaded && !(await within(() => ledger.spend.loaded))) return
      const now = Date.now()
      const t = ledger.spend.totals(now)
      // The members' spend of the day and month the totals are of (they may have rolled past `now`'s),
      // read from the database: while it cannot be read (PostgreSQL away), no sample rather than a
      // partial sum, and never a failed scrape (its ledger_writable 0 is what an alert reads then).
      const members = teamServer ? await readOrNull(ingestedSpend(ctx.store, ledger.spend, ledger.spend.totalsAt(now))) : { day: 0, month: 0 }
      if (members === null) return
      this.labels('today').set(t.day + members.day)
      this.labels('month').set(t.month + members.month)
    },
  })
}

/** What `read` gives, or null when it fails or takes longer than a scrape waits for a read (READ_WAIT_MS). */
async function readOrNull<T>(read: Promise<T>): Promise<T | null> {
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<null>((resolve) => {
    timer = setTimeout(() => resolve(null), READ_WAIT_MS)
    timer.unref()
  })
  try {
    return await Promise.race([read, late])
  } catch {
    return null
  } finally {
    clearTimeout(timer)
    read.catch(() => {})
  }
}
