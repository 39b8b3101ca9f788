import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { spendCounter, spendMover } from '../../src/main/budgets/state/pg/call-spend'
import { importLogs } from '../../src/main/import/importer'
import { openDatabase } from '../../src/main/ledger/db'
import { Pricer } from '../../src/main/pricing/price'
import { fixture } from '../support/fixtures'
import { eventually, postJson, request } from '../support/http'
import { usePostgres } from '../support/pg-harness'

/**
 * On PostgreSQL, a Claude Code answer imported before the proxy recorded it (still streaming past
 * the import's wait) gives way to the proxy's record when the log is read again: one answer's
 * money, the proxy's, in the calls, the rollups, the shared spend rows and every instance's meters.
 */

const countSpend = spendCounter({ timezone: 'UTC', budgets: { week_start: 'monday' } })
const moveSpend = spendMover({ timezone: 'UTC', budgets: { week_start: 'monday' } })
const h = usePostgres({ upstream: () => ({ status: 200, headers: { 'content-type': 'application/json' }, body: fixture('anthropic/messages-nonstream-basic.json') }) })
const BODY = JSON.parse(fixture('anthropic/messages-nonstream-basic.json').toString())

describe('an imported answer and the proxy\'s later record of it, on PostgreSQL', () => {
  it('the proxy\'s record supersedes the imported call: its money counted once everywhere', async () => {
    const url = h.database()
    const store = h.store(url)
    // Its proxy does not look for the imported twin as it records the answer (./import-superseded-at-record.test.ts does): the next read of the log does.
    const t = await h.server({ url, config: { budgets: { rules: [{ api_key_pattern: '*', monthly_limit_usd: 1000, action: 'warn' }] } }, create: { supersedeAfterMs: 3_600_000 } })
    const { budgetsOf } = await import('../../src/main/budgets')
    const feed = budgetsOf(t.server.context).feed!
    await eventually(() => feed.stats.reloads > 0, 20_000)
    const keylessSpent = async () => {
      const body = (await request(`${t.url}/api/dashboard/budgets`)).json()
      return body.rules.find((r: any) => r.api_key_hash === '')?.windows.find((w: any) => w.period === 'monthly')?.spent_usd ?? 0
    }
    const dir = h.tempDir('burnrate-pg-import-superseded-')
    mkdirSync(join(dir, 'projects/p'), { recursive: true })
    const f = join(dir, 'projects/p/s.jsonl')
    const ts = Date.now() - 60_000
    const line = (out: number, at: number) => JSON.stringify({
      type: 'assistant', sessionId: 's', cwd: '/home/dev/x', timestamp: new Date(at).toISOString(), requestId: 'req_1',
      message: { ...BODY, usage: { ...BODY.usage, output_tokens: out } },
    }) + '\n'
    const cli = openDatabase(join(dir, 'cli.db'))
    const pricer = new Pricer()
    const read = () => importLogs(cli, { agent: 'claude-code', paths: [join(dir, 'projects')], pricer, store, countSpend, moveSpend })
    // Its first block's line (placeholder output), imported before the proxy recorded anything.
    writeFileSync(f, line(1, ts))
    expect(await read()).toMatchObject({ imported: 1 })
    const partial = (await store.get<{ id: number; cost_usd: number }>("SELECT id, cost_usd FROM calls WHERE source = 'import'"))!
    await eventually(async () => (await keylessSpent()) === partial.cost_usd, 20_000)

    // The answer ends: the proxy records it, then the log's last line comes and is read.
    expect((await postJson(`${t.url}/anthropic/v1/messages`, { model: 'claude-sonnet-4-5', messages: [] }, { 'x-api-key': 'sk-ant-superseded-0000001' })).status).toBe(200)
    expect(await t.server.ledger.flushed()).toBe(true)
    writeFileSync(f, line(1, ts) + line(BODY.usage.output_tokens, ts + 2000))
    const after = await read()
    expect(after).toMatchObject({ imported: 0, updated: 0, superseded: 1 })
    expect(after.cost_usd).toBe(-partial.cost_usd)
    const proxied = (await store.get<{ id: number; cost_usd: number }>("SELECT id, cost_usd FROM calls WHERE source = 'proxy'"))!
    expect(await store.get<any>("SELECT input_tokens, output_tokens, cost_usd FROM calls WHERE source = 'import'")).toMatchObject({ input_tokens: 0, output_tokens: 0, cost_usd: 0 })
    expect(cli.prepare('SELECT call_id FROM import_keys').pluck().all()).toEqual([proxied.id])
    // The rollups hold the proxy's call alone; the shared spend rows and the meters nothing imported.
    const day = (await store.get<{ c: number; n: number }>('SELECT sum(cost_usd) AS c, sum(requests) AS n FROM dash_day'))!
    expect(Number(day.c)).toBeCloseTo(proxied.cost_usd, 12)
    // One answer, one request: the imported row stays, at $0, naming the proxy's call, and is none.
    expect(Number(day.n)).toBe(1)
    expect(Number((await store.get<{ s: number }>("SELECT superseded_by AS s FROM calls WHERE source = 'import'"))!.s)).toBe(Number(proxied.id))
    expect((await request(`${t.url}/api/dashboard/summary`)).json().today_requests).toBe(1)
    await eventually(async () => (await keylessSpent()) === 0, 20_000)

    // Read again: nothing moves.
    writeFileSync(f, line(1, ts) + line(BODY.usage.output_tokens, ts + 2000) + line(BODY.usage.output_tokens, ts + 3000))
    expect(await read()).toMatchObject({ imported: 0, updated: 0, superseded: 0, duplicates: 1, cost_usd: 0 })
    cli.close()
  })
})
