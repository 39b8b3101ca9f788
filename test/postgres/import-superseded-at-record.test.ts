import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { spendCounter, spendMover } from '../../src/main/budgets/state/pg/call-spend'
import { importLogs } from '../../src/main/import/importer'
import { openDatabase } from '../../src/main/ledger/db'
import { Pricer } from '../../src/main/pricing/price'
import { migratePostgres } from '../../src/main/storage/postgres-migrations'
import { fixture } from '../support/fixtures'
import { eventually, postJson, request } from '../support/http'
import { usePostgres } from '../support/pg-harness'

/**
 * On PostgreSQL, a Claude Code answer imported before the proxy recorded it, its log never written
 * again: the proxy's record supersedes it as the proxy records it (it did only at the next read of
 * the log, so an unchanged log kept both: the answer's money counted twice), one request, and the
 * proxy's call is claimed as a match claims it (it was not: another machine's log entry with the
 * same counts, no provider id, was then matched to it, and that call's money lost).
 */

const countSpend = spendCounter({ timezone: 'UTC', budgets: { week_start: 'monday' } })
const moveSpend = spendMover({ timezone: 'UTC', budgets: { week_start: 'monday' } })
const h = usePostgres({ upstream: () => ({ status: 200, headers: { 'content-type': 'application/json' }, body: fixture('anthropic/messages-nonstream-basic.json') }) })
const BODY = JSON.parse(fixture('anthropic/messages-nonstream-basic.json').toString())

describe('an imported answer the proxy records afterwards, on PostgreSQL', () => {
  it('is superseded as the proxy records it, counted once, and its proxied call claimed', async () => {
    const url = h.database()
    const store = h.store(url)
    const t = await h.server({ url, config: { budgets: { rules: [{ api_key_pattern: '*', monthly_limit_usd: 1000, action: 'warn' }] } } })
    const { budgetsOf } = await import('../../src/main/budgets')
    const feed = budgetsOf(t.server.context).feed!
    await eventually(() => feed.stats.reloads > 0, 20_000)
    const keylessSpent = async () => {
      const body = (await request(`${t.url}/api/dashboard/budgets`)).json()
      return body.rules.find((r: any) => r.api_key_hash === '')?.windows.find((w: any) => w.period === 'monthly')?.spent_usd ?? 0
    }
    const dir = h.tempDir('burnrate-pg-superseded-at-record-')
    mkdirSync(join(dir, 'projects/p'), { recursive: true })
    const ts = Date.now() - 60_000
    writeFileSync(join(dir, 'projects/p/s.jsonl'), JSON.stringify({
      type: 'assistant', sessionId: 's', cwd: '/home/dev/x', timestamp: new Date(ts).toISOString(), requestId: 'req_1',
      message: { ...BODY, usage: { ...BODY.usage, output_tokens: 1 } },
    }) + '\n')
    const cli = openDatabase(join(dir, 'cli.db'))
    const pricer = new Pricer()
    // Its first block's line (placeholder output), imported by `burnrate import` before the proxy recorded anything.
    expect(await importLogs(cli, { agent: 'claude-code', paths: [join(dir, 'projects')], pricer, store, countSpend, moveSpend })).toMatchObject({ imported: 1 })
    const partial = (await store.get<{ id: number; cost_usd: number }>("SELECT id, cost_usd FROM calls WHERE source = 'import'"))!
    await eventually(async () => (await keylessSpent()) === partial.cost_usd, 20_000)

    // The answer ends: the proxy records it. Its log is not written again, nor read.
    expect((await postJson(`${t.url}/anthropic/v1/messages`, { model: 'claude-sonnet-4-5', messages: [] }, { 'x-api-key': 'sk-ant-superseded-0000003' })).status).toBe(200)
    expect(await t.server.ledger.flushed()).toBe(true)
    const proxied = (await store.get<{ id: number; ts: number; cost_usd: number }>("SELECT id, ts, cost_usd FROM calls WHERE source = 'proxy'"))!
    await eventually(async () => Number((await store.get<{ c: number }>("SELECT cost_usd AS c FROM calls WHERE source = 'import'"))!.c) === 0, 20_000)
    const imported = (await store.get<any>("SELECT input_tokens, output_tokens, cost_usd, superseded_by FROM calls WHERE source = 'import'"))!
    expect({ ...imported, superseded_by: Number(imported.superseded_by) }).toEqual({ input_tokens: 0, output_tokens: 0, cost_usd: 0, superseded_by: Number(proxied.id) })
    const day = (await store.get<{ c: number; n: number }>('SELECT sum(cost_usd) AS c, sum(requests) AS n FROM dash_day'))!
    expect(Number(day.c)).toBeCloseTo(proxied.cost_usd, 12)
    expect(Number(day.n)).toBe(1)
    await eventually(async () => (await keylessSpent()) === 0, 20_000)
    const summary = (await request(`${t.url}/api/dashboard/summary`)).json()
    expect(summary.today_requests).toBe(1)
    // The proxied call is claimed, by the imported call's keys.
    expect((await store.all<{ call_id: number }>('SELECT call_id FROM import_claims')).map((c) => Number(c.call_id))).toEqual([Number(proxied.id)])

    await expectOtherMachinesCallImported(dir, proxied, store)
    cli.close()
  })

  it('superseded at the next read of its log (the server stopped before it looked), its proxied call is claimed too', async () => {
    const url = h.database()
    const store = h.store(url)
    const t = await h.server({ url, create: { supersedeAfterMs: 3_600_000 } })
    await migratePostgres(store)
    const dir = h.tempDir('burnrate-pg-superseded-at-read-')
    mkdirSync(join(dir, 'projects/p'), { recursive: true })
    const f = join(dir, 'projects/p/s.jsonl')
    const ts = Date.now() - 60_000
    const line = (out: number, at: number) => JSON.stringify({
      type: 'assistant', sessionId: 's', cwd: '/home/dev/x', timestamp: new Date(at).toISOString(), requestId: 'req_1',
      message: { ...BODY, usage: { ...BODY.usage, output_tokens: out } },
    }) + '\n'
    const cli = openDatabase(join(dir, 'cli.db'))
    const read = () => importLogs(cli, { agent: 'claude-code', paths: [join(dir, 'projects')], pricer: new Pricer(), store, countSpend, moveSpend })
    writeFileSync(f, line(1, ts))
    expect(await read()).toMatchObject({ imported: 1 })
    expect((await postJson(`${t.url}/anthropic/v1/messages`, { model: 'claude-sonnet-4-5', messages: [] }, { 'x-api-key': 'sk-ant-superseded-0000004' })).status).toBe(200)
    expect(await t.server.ledger.flushed()).toBe(true)
    writeFileSync(f, line(1, ts) + line(BODY.usage.output_tokens, ts + 2000))
    expect(await read()).toMatchObject({ superseded: 1 })
    const proxied = (await store.get<{ id: number; ts: number }>("SELECT id, ts FROM calls WHERE source = 'proxy'"))!
    expect(Number((await store.get<{ n: number }>('SELECT sum(requests) AS n FROM dash_day'))!.n)).toBe(1)
    await expectOtherMachinesCallImported(dir, proxied, store)
    cli.close()
  })
})

/**
 * Another machine's opencode, not through Burnrate, made a call with the proxied call's counts a
 * second later (no provider id in its log): its own call, imported, its money counted, never
 * matched to the proxied call the imported answer gave way to.
 */
async function expectOtherMachinesCallImported(dir: string, proxied: { ts: number }, store: ReturnType<typeof h.store>): Promise<void> {
  {
    const pricer = new Pricer()
    const oc = join(dir, 'opencode')
    mkdirSync(join(oc, 'storage/message/ses_b'), { recursive: true })
    writeFileSync(join(oc, 'storage/message/ses_b/msg_b1.json'), JSON.stringify({
      id: 'msg_b1', role: 'assistant', sessionID: 'ses_b', providerID: 'anthropic', modelID: 'claude-sonnet-4-5-20250929', path: { cwd: '/home/b' },
      cost: 0.001, time: { created: Number(proxied.ts) + 1000, completed: Number(proxied.ts) + 2000 },
      tokens: { input: BODY.usage.input_tokens, output: BODY.usage.output_tokens, reasoning: 0, cache: { read: 0, write: 0 } },
    }))
    const other = openDatabase(join(dir, 'other.db'))
    const sb = await importLogs(other, { agent: 'opencode', paths: [oc], pricer, store, countSpend, moveSpend, now: Number(proxied.ts) + 60_000 })
    expect(sb, JSON.stringify(sb)).toMatchObject({ matched: 0, imported: 1 })
    expect(sb.cost_usd).toBeGreaterThan(0)
    other.close()
  }
}
