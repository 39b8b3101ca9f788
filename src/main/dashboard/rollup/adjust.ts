import type { SqlStore } from '../../storage/sql'
import { DayOf, MonthOf, REPORT_TIERS, eachReportRow } from './report'
import { eachSessionRow } from './report-sessions'
import { FIVE_MIN, TIERS } from './schema'
import type { Dim, RollupInput } from './writer'

/** A call whose cost changed by `delta` (re-priced), with what the rollups group it by. */
export type CostChange = Pick<
  RollupInput,
  'ts' | 'provider' | 'model' | 'api_key_hash' | 'tenant' | 'agent' | 'session' | 'project' | 'billing' | 'member'
> & { delta: number }

/**
 * Moves the rollups by the cost changes of calls they already include, so they stay equal to
 * what folding the re-priced calls afresh would give: a call billed per token moves `cost_usd`
 * of every rollup table it is in (the report rollup's days, months and session totals too); a subscription call
 * moves `plan_value_usd` of the hourly and daily totals. Runs inside the caller's transaction (the one that updates the calls), on either
 * store: each change is added in SQL, and rows are touched in one sorted order, so instances
 * adjusting the same rows at once neither lose a change nor deadlock.
 */
export async function adjustRollups(tx: SqlStore, changes: readonly CostChange[]): Promise<void> {
  // Summed per rollup row first: one UPDATE per touched row.
  const sums = new Map<string, { sql: string; params: Record<string, unknown>; delta: number }>()
  const add = (key: string, delta: number, sql: string, params: Record<string, unknown>) => {
    let e = sums.get(key)
    if (!e) sums.set(key, (e = { sql, params, delta: 0 }))
    e.delta += delta
  }
  const days = await reportDays(tx)
  for (const c of changes) {
    if (!c.delta) continue
    // The report rollup (SQLite) sums every call's cost_usd, subscription calls' too.
    if (days) {
      const day = days.day.of(c.ts)
      const who = { tenant: c.tenant, agent: c.agent, project: c.project ?? '', session: c.session }
      for (const [tier, period] of [[REPORT_TIERS.day, day], [REPORT_TIERS.month, days.month.of(day)]] as const) {
        eachReportRow(who, (dim, tenant, key) =>
          add(
            `r${tier.col}\0${dim}\0${period}\0${tenant}\0${key}\0${c.model}\0${c.provider}`,
            c.delta,
            `UPDATE ${tier.table} SET cost_usd = cost_usd + @delta WHERE dim = @dim AND ${tier.col} = @period AND tenant = @tenant AND key = @key AND model = @model AND provider = @provider`,
            { dim, period, tenant, key, model: c.model, provider: c.provider },
          ),
        )
      }
      eachSessionRow(who, (across, tenant) =>
        add(
          `rs\0${across}\0${tenant}\0${c.session}`,
          c.delta,
          'UPDATE dash_report_session SET cost_usd = cost_usd + @delta WHERE across = @across AND tenant = @tenant AND session = @session',
          { across, tenant, session: c.session },
        ),
      )
    }
    if (c.billing === 'subscription') {
      TIERS.forEach((t, i) => {
        const bucket = Math.floor(c.ts / t.grain) * t.grain
        add(`p${i}\0${bucket}\0${c.tenant}`, c.delta, `UPDATE ${t.totals} SET plan_value_usd = plan_value_usd + @delta WHERE bucket = @bucket AND tenant = @tenant`, {
          bucket, tenant: c.tenant,
        })
      })
      continue
    }
    const b5 = Math.floor(c.ts / FIVE_MIN) * FIVE_MIN
    add(`5\0${b5}\0${c.tenant}`, c.delta, 'UPDATE dash_5m SET cost_usd = cost_usd + @delta WHERE bucket = @bucket AND tenant = @tenant', {
      bucket: b5, tenant: c.tenant,
    })
    TIERS.forEach((t, i) => {
      const bucket = Math.floor(c.ts / t.grain) * t.grain
      add(`t${i}\0${bucket}\0${c.tenant}`, c.delta, `UPDATE ${t.totals} SET cost_usd = cost_usd + @delta WHERE bucket = @bucket AND tenant = @tenant`, {
        bucket, tenant: c.tenant,
      })
      const dims: [Dim, string, string][] = [
        ['model', c.model, c.provider],
        ['provider', c.provider, ''],
        ['agent', c.agent, ''],
        ['session', c.session, ''],
        ['api_key', c.api_key_hash, ''],
        ['project', c.project ?? '', ''],
        ['member', c.member ?? '', ''],
      ]
      for (const [dim, key, provider] of dims) {
        add(
          `d${i}\0${dim}\0${bucket}\0${c.tenant}\0${key}\0${provider}`,
          c.delta,
          `UPDATE ${t.dims} SET cost_usd = cost_usd + @delta WHERE dim = @dim AND bucket = @bucket AND tenant = @tenant AND key = @key AND provider = @provider`,
          { dim, bucket, tenant: c.tenant, key, provider },
        )
      }
    })
    if (c.session !== '') {
      add(`s\0${c.tenant}\0${c.agent}\0${c.session}`, c.delta, 'UPDATE dash_session SET cost_usd = cost_usd + @delta WHERE tenant = @tenant AND agent = @agent AND session = @session', {
        tenant: c.tenant, agent: c.agent, session: c.session,
      })
    }
  }
  for (const k of [...sums.keys()].sort()) {
    const e = sums.get(k)!
    await tx.run(e.sql, { ...e.params, delta: e.delta })
  }
}

/** The days and months of the SQLite report rollup (kept in one zone), or null where there is none (PostgreSQL). */
async function reportDays(tx: SqlStore): Promise<{ day: DayOf; month: MonthOf } | null> {
  if (tx.dialect !== 'sqlite') return null
  const has = await tx.get<{ n: number }>("SELECT count(*) AS n FROM sqlite_master WHERE name = 'dash_report_state'")
  if (!has?.n) return null
  const row = await tx.get<{ tz: string | null }>('SELECT tz FROM dash_report_state WHERE id = 1')
  return row?.tz ? { day: new DayOf(row.tz), month: new MonthOf(row.tz) } : null
}
