import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { GROUP_BYS } from '../../src/shared/api'
import { spendCounter, spendMover } from '../../src/main/budgets/state/pg/call-spend'
import { importLogs } from '../../src/main/import/importer'
import { openDatabase } from '../../src/main/ledger/db'
import { Pricer } from '../../src/main/pricing/price'
import { REPORT_KINDS } from '../../src/main/report/report'
import { migratePostgres } from '../../src/main/storage/postgres-migrations'
import { fixture } from '../support/fixtures'
import { eventually, postJson, request } from '../support/http'
import { usePostgres } from '../support/pg-harness'

/**
 * On PostgreSQL, a group whose only call was an imported one the proxy's record superseded is no
 * group: the dashboard's costs (read from the rollups, whose rows folded before the supersede stay
 * at $0 and 0 requests) listed it and counted it in total_rows; `burnrate report` (summed from the
 * calls on PostgreSQL) never did, and still does not. Nor is it among the most expensive requests
 * (listed there at $0 beside the proxy's call). (SQLite: ../import/superseded-report-groups.test.ts.)
 */

const countSpend = spendCounter({ timezone: 'UTC', budgets: { week_start: 'monday' } })
const moveSpend = spendMover({ timezone: 'UTC', budgets: { week_start: 'monday' } })
const h = usePostgres({ upstream: () => ({ status: 200, headers: { 'content-type': 'application/json' }, body: fixture('anthropic/messages-nonstream-basic.json') }) })
const BODY = JSON.parse(fixture('anthropic/messages-nonstream-basic.json').toString())
const DAY = 86_400_000

describe('a group whose only call was superseded, on PostgreSQL', () => {
  it('is no row of the dashboard\'s costs nor of any report kind', async () => {
    const url = h.database()
    const store = h.store(url)
    const t = await h.server({ url, config: { timezone: 'UTC' } })
    await migratePostgres(store)
    const dir = h.tempDir('burnrate-pg-superseded-groups-')
    mkdirSync(join(dir, 'projects/p'), { recursive: true })
    // Two days ago (a whole day and whole hours of the rollups), with an agent, project, session,
    // model and key (none) that the proxy's record of the answer does not have.
    writeFileSync(join(dir, 'projects/p/old.jsonl'), JSON.stringify({
      type: 'assistant', sessionId: 'old', cwd: '/home/dev/shop', timestamp: new Date(Date.now() - 2 * DAY).toISOString(), requestId: 'req_1',
      message: { ...BODY, model: 'claude-haiku-4-5', usage: { ...BODY.usage, output_tokens: 1 } },
    }) + '\n')
    const cli = openDatabase(join(dir, 'cli.db'))
    expect(await importLogs(cli, { agent: 'claude-code', paths: [join(dir, 'projects')], pricer: new Pricer(), store, countSpend, moveSpend })).toMatchObject({ imported: 1 })
    cli.close()
    // Folded into the rollups before it is superseded.
    const folded = async (key: string) => Number((await store.get<{ n: number }>("SELECT count(*) AS n FROM dash_dim_day WHERE dim = 'project' AND key = @key", { key }))!.n)
    await eventually(async () => (await folded('/home/dev/shop')) === 1, 20_000)

    // The proxy records the answer, and supersedes the imported call as it does.
    expect((await postJson(`${t.url}/anthropic/v1/messages`, { model: 'claude-sonnet-4-5', messages: [] }, { 'x-api-key': 'sk-ant-groups-0000000002' })).status).toBe(200)
    expect(await t.server.ledger.flushed()).toBe(true)
    await eventually(async () => (await store.get<{ s: number | null }>("SELECT superseded_by AS s FROM calls WHERE source = 'import'"))!.s !== null, 20_000)
    await eventually(async () => (await folded('')) === 1, 20_000)
    const proxied = Number((await store.get<{ c: number }>("SELECT cost_usd AS c FROM calls WHERE source = 'proxy'"))!.c)

    for (const range of ['7d', '30d']) {
      for (const groupBy of GROUP_BYS) {
        for (const limit of [1, 100]) {
          const c = (await request(`${t.url}/api/dashboard/costs?group_by=${groupBy}&range=${range}&limit=${limit}`)).json()
          const what = `${groupBy}, ${range}, limit ${limit}`
          expect(c.rows.map((x: any) => [x.requests, x.cost_usd, x.other ?? false]), what).toEqual([[1, proxied, false]])
          expect(c.total_rows, what).toBe(1)
        }
      }
    }
    for (const kind of REPORT_KINDS) {
      const r = (await request(`${t.url}/api/dashboard/report?kind=${kind}`)).json()
      expect(r.rows.map((x: any) => [x.requests, x.cost_usd]), kind).toEqual([[1, proxied]])
      expect(r.total_rows, kind).toBe(1)
    }
    // Nor is it one of the most expensive requests (read from the calls), while the export, the audit trail, lists it at $0.
    for (const range of ['7d', '30d']) {
      expect((await request(`${t.url}/api/dashboard/expensive?range=${range}`)).json().requests.map((c: any) => c.cost_usd), range).toEqual([proxied])
      const exported = (await request(`${t.url}/api/dashboard/export?format=json&range=${range}`)).json()
      expect(exported.calls.map((c: any) => c.cost_usd).sort(), range).toEqual([0, proxied])
    }
  })
})
