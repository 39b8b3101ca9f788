import type Database from 'better-sqlite3'
import { DayOf, reportZone } from './report'
import { FIVE_MIN, TIERS } from './schema'
import { type Dim, type RollupInput, hasColumn } from './writer'

/** A call whose cost changed by `delta` (re-priced), with what the rollups group it by. */
export type CostChange = Pick<
  RollupInput,
  'ts' | 'provider' | 'model' | 'api_key_hash' | 'tenant' | 'agent' | 'session' | 'billing'
> & { project?: string; delta: number }

/**
 * Moves the rollups by the cost changes of calls they already include, so they stay equal to
 * what folding the re-priced calls afresh would give: a call billed per token moves `cost_usd`
 * of every rollup table it is in; a subscription call moves `plan_value_usd` of the hourly and
 * daily totals. Runs inside the caller's transaction (the one that updates the calls).
 */
export class RollupAdjuster {
  private readonly five: Database.Statement
  private readonly totals: Database.Statement[]
  private readonly plan: Database.Statement[] | null
  private readonly dims: Database.Statement[]
  private readonly session: Database.Statement
  private readonly report: { update: Database.Statement; days: DayOf } | null

  constructor(db: Database.Database) {
    this.five = db.prepare('UPDATE dash_5m SET cost_usd = cost_usd + ? WHERE bucket = ? AND tenant = ?')
    this.totals = TIERS.map((t) => db.prepare(`UPDATE ${t.totals} SET cost_usd = cost_usd + ? WHERE bucket = ? AND tenant = ?`))
    this.plan = hasColumn(db, 'dash_hour', 'plan_value_usd')
      ? TIERS.map((t) => db.prepare(`UPDATE ${t.totals} SET plan_value_usd = plan_value_usd + ? WHERE bucket = ? AND tenant = ?`))
      : null
    this.dims = TIERS.map((t) =>
      db.prepare(`UPDATE ${t.dims} SET cost_usd = cost_usd + ? WHERE dim = ? AND bucket = ? AND tenant = ? AND key = ? AND provider = ?`),
    )
    this.session = db.prepare('UPDATE dash_session SET cost_usd = cost_usd + ? WHERE tenant = ? AND agent = ? AND session = ?')
    const tz = reportZone(db)
    this.report =
      tz === null
        ? null
        : {
            update: db.prepare(
              'UPDATE dash_report_day SET cost_usd = cost_usd + ? WHERE dim = ? AND day = ? AND tenant = ? AND key = ? AND model = ? AND provider = ?',
            ),
            days: new DayOf(tz),
          }
  }

  apply(changes: readonly CostChange[]): void {
    // Summed per rollup row first: one UPDATE per touched row.
    const sums = new Map<string, { run: () => void; delta: number }>()
    const add = (key: string, delta: number, run: (d: number) => void) => {
      let e = sums.get(key)
      if (!e) {
        const entry = { delta: 0, run: () => run(entry.delta) }
        sums.set(key, (e = entry))
      }
      e.delta += delta
    }
    for (const c of changes) {
      if (!c.delta) continue
      // The report sums every call's cost_usd, subscription calls' too.
      if (this.report) {
        const rep = this.report
        const day = rep.days.of(c.ts)
        for (const [dim, key] of [['', ''], ['agent', c.agent], ['project', c.project ?? ''], ['session', c.session]]) {
          add(`r\0${dim}\0${day}\0${c.tenant}\0${key}\0${c.model}\0${c.provider}`, c.delta, (d) =>
            rep.update.run(d, dim, day, c.tenant, key, c.model, c.provider),
          )
        }
      }
      if (c.billing === 'subscription') {
        if (!this.plan) continue
        TIERS.forEach((t, i) => {
          const b = Math.floor(c.ts / t.grain) * t.grain
          add(`p${i}\0${b}\0${c.tenant}`, c.delta, (d) => this.plan![i].run(d, b, c.tenant))
        })
        continue
      }
      const b5 = Math.floor(c.ts / FIVE_MIN) * FIVE_MIN
      add(`5\0${b5}\0${c.tenant}`, c.delta, (d) => this.five.run(d, b5, c.tenant))
      TIERS.forEach((t, i) => {
        const b = Math.floor(c.ts / t.grain) * t.grain
        add(`t${i}\0${b}\0${c.tenant}`, c.delta, (d) => this.totals[i].run(d, b, c.tenant))
        const dims: [Dim, string, string][] = [
          ['model', c.model, c.provider],
          ['provider', c.provider, ''],
          ['agent', c.agent, ''],
          ['session', c.session, ''],
          ['api_key', c.api_key_hash, ''],
          ['project', c.project ?? '', ''],
        ]
        for (const [dim, key, provider] of dims) {
          add(`d${i}\0${dim}\0${b}\0${c.tenant}\0${key}\0${provider}`, c.delta, (d) =>
            this.dims[i].run(d, dim, b, c.tenant, key, provider),
          )
        }
      })
      if (c.session !== '') {
        add(`s\0${c.tenant}\0${c.agent}\0${c.session}`, c.delta, (d) => this.session.run(d, c.tenant, c.agent, c.session))
      }
    }
    for (const e of sums.values()) e.run()
  }
}
