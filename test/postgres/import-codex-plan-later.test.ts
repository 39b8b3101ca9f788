import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { expect, it } from 'vitest'
import { spendCounter, spendMover } from '../../src/main/budgets/state/pg/call-spend'
import { importLogs } from '../../src/main/import/importer'
import { openDatabase } from '../../src/main/ledger/db'
import { Pricer } from '../../src/main/pricing/price'
import type { PostgresStore } from '../../src/main/storage/postgres'
import { migratePostgres } from '../../src/main/storage/postgres-migrations'
import { PeriodClock } from '../../src/main/time/zone'
import { eventually, request } from '../support/http'
import { usePostgres } from '../support/pg-harness'
import { planNamed, twoResponses } from '../import/codex-plan-rollout'

/**
 * A Codex session whose plan only a later event names (test/import/codex-plan-later.test.ts), on
 * a PostgreSQL ledger: the calls imported as money before it are plan usage once the grown
 * rollout is read, in the calls, the rollups and a server's budget meters
 * (told through the calls feed), as a first read of the whole rollout stores them.
 */
const h = usePostgres({ upstream: false })
const countSpend = spendCounter({ timezone: 'UTC', budgets: { week_start: 'monday' } })
const moveSpend = spendMover({ timezone: 'UTC', budgets: { week_start: 'monday' } })
const pricer = new Pricer()


const SUMS = ['requests', 'cost_usd', 'plan_value_usd', 'input_tokens', 'output_tokens', 'cache_read_tokens', 'cache_write_tokens']
/** Every rollup table's rows as the dashboard reads them (a row at 0 requests, $0 and no tokens is no group), money to 12 significant digits. */
async function rollups(store: PostgresStore): Promise<Record<string, unknown[]>> {
  const out: Record<string, unknown[]> = {}
  for (const t of ['dash_5m', 'dash_hour', 'dash_day', 'dash_dim_hour', 'dash_dim_day', 'dash_session']) {
    out[t] = (await store.all<Record<string, unknown>>(`SELECT * FROM ${t}`))
      .map((r) => Object.fromEntries(Object.entries(r).map(([k, v]) => [k, typeof v === 'number' || typeof v === 'string' && /^-?\d/.test(v) && SUMS.includes(k) ? Number(Number(v).toPrecision(12)) : v])))
      .filter((r) => SUMS.some((k) => r[k] !== undefined && r[k] !== 0))
      .sort((a, b) => (JSON.stringify(a) < JSON.stringify(b) ? -1 : 1))
  }
  return out
}

it('PostgreSQL: the calls of a Codex session imported as money before a later event named its plan are plan usage once it is read again', async () => {
  const url = h.database()
  const store = h.store(url)
  const t = await h.server({ url, config: { budgets: { rules: [{ api_key_pattern: '*', monthly_limit_usd: 1000, action: 'warn' }] } }, upstream: null })
  const { budgetsOf } = await import('../../src/main/budgets')
  const feed = budgetsOf(t.server.context).feed!
  await eventually(() => feed.stats.reloads > 0, 20_000)
  const spent = async () => {
    const body = (await request(`${t.url}/api/dashboard/budgets`)).json()
    return body.rules.find((r: any) => r.rule.api_key_pattern === '*' && r.api_key_hash === '')?.windows.find((w: any) => w.period === 'monthly')?.spent_usd ?? 0
  }

  // A session of this month, an older Codex's: no account in session_meta, no rate limits in its first events.
  const now = Date.now()
  const T = Math.max(new PeriodClock('UTC').monthOf(now).start, now - 120_000)
  const dir = h.tempDir('burnrate-pg-codex-plan-later-')
  const day = new Date(T).toISOString().slice(0, 10).split('-')
  const folder = join(dir, 'sessions', ...day)
  mkdirSync(folder, { recursive: true })
  const file = join(folder, 'rollout-2026-11-20T10-00-00-abc.jsonl')
  writeFileSync(file,
    twoResponses(T))
  const cli = openDatabase(join(dir, 'cli.db'))
  h.onTeardown(() => cli.close())
  const opts = { agent: 'codex' as const, paths: [join(dir, 'sessions')], pricer, now: T + 60_000, store, countSpend, moveSpend }
  expect(await importLogs(cli, opts)).toMatchObject({ imported: 2 })
  const money = Number((await store.get<{ c: number }>('SELECT sum(cost_usd) AS c FROM calls'))!.c)
  expect(money).toBeGreaterThan(0)
  await eventually(async () => Math.abs((await spent()) - money) <= 1e-12, 20_000)

  // The event that names the plan.
  appendFileSync(file, planNamed(T))
  expect(await importLogs(cli, opts)).toMatchObject({ imported: 1, reclassed: 2, duplicates: 0 })
  const rows = await store.all<{ provider: string; billing: string; source: string }>('SELECT provider, billing, source FROM calls ORDER BY ts')
  expect(rows.map((r) => [r.provider, r.billing, r.source])).toEqual(Array(3).fill(['chatgpt', 'subscription', 'import']))
  const totals = (await store.get<{ money: number; plan: number; n: number }>('SELECT sum(cost_usd) AS money, sum(plan_value_usd) AS plan, sum(requests) AS n FROM dash_day'))!
  expect([Number(totals.money), Number(totals.n)]).toEqual([0, 3])
  // No money left in the server's meters (told through the calls feed).
  await eventually(async () => Math.abs(await spent()) <= 1e-12, 20_000)

  // Every rollup as a first read of the whole rollout into another ledger has it.
  const fresh = h.store(h.database())
  await migratePostgres(fresh)
  const other = openDatabase(join(dir, 'other.db'))
  h.onTeardown(() => other.close())
  expect(await importLogs(other, { ...opts, store: fresh })).toMatchObject({ imported: 3 })
  expect(await rollups(store)).toEqual(await rollups(fresh))
})
