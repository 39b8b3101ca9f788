import { Counter, Gauge, type Registry } from 'prom-client'
import type { ServerContext } from '../server/context'

/** Ledger health and spend, read at scrape time from the ledger's status and in-memory spend. */
export function ledgerGauges(registry: Registry, ctx: Pick<ServerContext, 'ledger'>): void {
  const registers = [registry]
  const ledger = ctx.ledger
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
    help: 'Calls dropped and never recorded: more than ledger.max_pending waited while the database stayed unwritable, or the database refused the row.',
    registers,
    collect() {
      this.reset()
      this.inc(ledger.status.dropped)
    },
  })
  new Gauge({
    name: 'burnrate_ledger_writable',
    help: '1 while the database takes writes, 0 while it is locked, full or read-only.',
    registers,
    collect() {
      this.set(ledger.status.writable ? 1 : 0)
    },
  })
  new Gauge({
    name: 'burnrate_spend_usd',
    help: "Spend of every call today and this month (in the configured timezone), in US dollars, from the ledger's in-memory counters.",
    labelNames: ['period'],
    registers,
    collect() {
      const t = ledger.spend.totals()
      this.labels('today').set(t.day)
      this.labels('month').set(t.month)
    },
  })
}
