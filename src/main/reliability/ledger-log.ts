import type { LedgerStatus } from '../ledger/types'
import type { Logger } from '../log'
import type { Feature } from '../server/context'

/**
 * Writes to the log when the ledger stops being able to write its database, when it recovers,
 * and when calls had to be dropped: the same facts /api/health and the dashboard show, for
 * people who run Burnrate headless and read its log.
 */
export class LedgerLog {
  private wasWritable = true
  private dropped = 0
  private overflowed = 0
  private leftOnDisk = 0
  private since = 0

  constructor(
    private readonly log: Logger,
    private readonly now: () => number = Date.now,
  ) {}

  check(s: Readonly<LedgerStatus>): void {
    if (this.wasWritable && !s.writable) {
      this.since = this.now()
      this.log.warn(`the database cannot be written (${s.last_error ?? 'unknown error'}); calls are kept in memory and retried`)
    } else if (!this.wasWritable && s.writable) {
      const secs = Math.round((this.now() - this.since) / 1000)
      this.log.info(`the database is writable again after ${secs} s; the calls kept in memory are saved`)
    }
    // Each reason its own line: calls past ledger.max_pending, and the others (a row the database refused...).
    const overflowed = Math.min(s.overflowed ?? 0, s.dropped)
    const over = overflowed - this.overflowed
    const other = s.dropped - this.dropped - over
    if (over > 0) {
      this.log.error(`${over} call(s) were dropped: more than ledger.max_pending calls waited for the database (${s.dropped} in all)`)
    }
    if (other > 0) {
      this.log.error(`${other} call(s) were dropped (${s.dropped} in all): ${s.last_drop ?? 'the database refused them'}`)
    }
    const total = s.left_on_disk_total ?? s.left_on_disk ?? 0
    const onDisk = total - this.leftOnDisk
    if (onDisk > 0) {
      this.log.warn(`${onDisk} call(s) left memory, more than ledger.max_pending waiting for the database; they are not lost: the spill journal on disk holds them (${total} in all)`)
    }
    this.wasWritable = s.writable
    this.dropped = s.dropped
    this.leftOnDisk = total
    this.overflowed = overflowed
  }
}

export const ledgerLog: Feature = (ctx) => {
  const watch = new LedgerLog(ctx.log)
  const timer = setInterval(() => watch.check(ctx.ledger.status), 1000)
  timer.unref()
  ctx.onClose(() => clearInterval(timer))
}
