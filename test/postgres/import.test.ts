import { mkdirSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { beforeAll, describe, expect, it } from 'vitest'
import { PeriodClock } from '../../src/main/time/zone'
import { spendCounter, spendMover } from '../../src/main/budgets/state/pg/call-spend'
import { applyRollups } from '../../src/main/dashboard/rollup/apply'
import { importLogs, storeCalls } from '../../src/main/import/importer'
import type { LoggedCall } from '../../src/main/import/types'
import { emptyUsage } from '../../src/main/metering/usage'
import { insertCalls } from '../../src/main/ledger/pg/insert'
import { openDatabase } from '../../src/main/ledger/db'
import { Pricer } from '../../src/main/pricing/price'
import { migratePostgres } from '../../src/main/storage/postgres-migrations'
import { copyLogsEndingAt } from '../support/agent-logs'
import { makeCall } from '../dashboard/seed'
import { fixture } from '../support/fixtures'
import { eventually, postJson, request } from '../support/http'
import { localValue, usePostgres } from '../support/pg-harness'
import type { TestServer } from '../support/server'

/**
 * Log import on a Burnrate whose ledger is PostgreSQL: imported calls go to PostgreSQL (with
 * their rollups), never to the instance's own SQLite file, and a logged call is stored once
 * even when a second instance on the same database reads the same logs.
 */

const LOGS = resolve(__dirname, '../fixtures/agent-logs')
/** Imported calls count in the shared budget spend rows, as a server or the CLI wires it. */
const countSpend = spendCounter({ timezone: 'UTC', budgets: { week_start: 'monday' } })
const moveSpend = spendMover({ timezone: 'UTC', budgets: { week_start: 'monday' } })
const h = usePostgres()
let home: string

beforeAll(() => {
  // The watcher reads the standard folders under the home folder: Claude Code's and Codex's sample
  // logs, moved to end a quarter of an hour ago (past the watcher's 10 minutes of settling, inside
  // the dashboard's last 30 days whatever today is).
  home = h.tempDir('burnrate-pg-import-home-')
  const latest = Date.now() - 15 * 60_000
  copyLogsEndingAt(join(LOGS, 'claude-code'), join(home, '.claude'), latest)
  copyLogsEndingAt(join(LOGS, 'codex'), join(home, '.codex'), latest)
})
/** The watching servers' agents' home: the one with the sample logs. */
const watching = () => ({ agentHome: { home, env: {}, platform: 'linux' as const } })
const local = (t: TestServer, sql: string): unknown => localValue(t.dbFile, sql)

describe('watching the logs on a Burnrate whose ledger is PostgreSQL', () => {
  it('imports into PostgreSQL, with rollups; a second instance reading the same logs stores nothing twice', async () => {
    const url = h.database()
    const store = h.store(url)
    const imported = () => store.get<{ n: number }>("SELECT count(*) AS n FROM calls WHERE source = 'import'").then((r) => r!.n)
    const a = await h.server({ url, config: { import: { watch: true } }, upstream: null, create: watching() })
    // Claude Code: 3 calls (one replayed in a side question); Codex: 2 calls, without a response id.
    await eventually(async () => (await imported()) === 5 && local(a, 'SELECT count(*) FROM import_keys') === 5, 30_000)
    expect(local(a, 'SELECT count(*) FROM calls')).toBe(0)
    const keys = await store.all<{ call_key: string }>("SELECT call_key FROM calls WHERE source = 'import'")
    expect(keys.every((k) => /^import:[0-9a-f]{64}$/.test(k.call_key))).toBe(true)

    // Another machine's Burnrate on the same database with the same logs (its own import keys are empty).
    const b = await h.server({ url, config: { import: { watch: true } }, upstream: null, create: watching() })
    await eventually(() => local(b, 'SELECT count(*) FROM import_files') === 3, 30_000)
    expect(await imported()).toBe(5)

    // The dashboards (rollups) count each imported call once.
    for (const t of [a, b]) {
      const costs = (await request(`${t.url}/api/dashboard/costs?group_by=agent&range=30d`)).json()
      const byAgent = Object.fromEntries(costs.rows.map((r: any) => [r.key, r.requests]))
      expect(byAgent).toEqual({ 'claude-code': 3, codex: 2 })
      const sum = costs.rows.reduce((s: number, r: any) => s + r.cost_usd, 0)
      const stored = (await store.get<{ c: number }>('SELECT sum(cost_usd) AS c FROM calls'))!.c
      expect(Math.abs(sum - stored)).toBeLessThanOrEqual(1e-9 * stored)
    }

    // A third instance that has seen no call itself shows each agent's last imported call, from PostgreSQL.
    const TOKEN = 'admin-token-for-pg-import-0123456789'
    const c = await h.server({ url, config: { admin: { enabled: true, token: TOKEN } }, upstream: null })
    const agents = (await request(`${c.url}/api/admin/agents`, { headers: { authorization: `Bearer ${TOKEN}` } })).json().agents
    const last = (await store.get<{ ts: number }>("SELECT max(ts) AS ts FROM calls WHERE agent = 'claude-code'"))!.ts
    expect(agents.find((x: any) => x.agent === 'claude-code')).toMatchObject({ last_import_at: new Date(last).toISOString(), last_call_at: null })
  })
})

describe('importing with a PostgreSQL ledger', () => {
  it('stores a logged call once even when this machine lost its import keys', async () => {
    const store = h.store(h.database())
    await migratePostgres(store)
    const dir = h.tempDir('burnrate-pg-import-')
    const paths = [join(LOGS, 'codex/sessions')]
    const pricer = new Pricer()
    const first = openDatabase(join(dir, 'one.db'))
    const s1 = await importLogs(first, { agent: 'codex', paths, pricer, store, countSpend, moveSpend })
    first.close()
    expect(s1).toMatchObject({ imported: 2, duplicates: 0 })
    const fresh = openDatabase(join(dir, 'two.db'))
    const s2 = await importLogs(fresh, { agent: 'codex', paths, pricer, store, countSpend, moveSpend })
    expect(s2).toMatchObject({ imported: 0, duplicates: 2, matched: 0 })
    expect(fresh.prepare('SELECT count(*) FROM calls').pluck().get()).toBe(0)
    fresh.close()
    expect((await store.get<{ n: number }>('SELECT count(*) AS n FROM calls'))!.n).toBe(2)
    expect((await store.get<{ n: number }>('SELECT sum(requests) AS n FROM dash_day'))!.n).toBe(2)
  })

  it('matches a logged call to the proxied call already in PostgreSQL instead of counting it twice', async () => {
    const url = h.database()
    const store = h.store(url)
    const t = await h.server({ url })
    h.upstream.setResponder(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body: fixture('anthropic/messages-nonstream-basic.json') }))
    expect((await postJson(`${t.url}/anthropic/v1/messages`, { model: 'claude-sonnet-4-5', messages: [] }, { 'x-api-key': 'sk-ant-test-000000000001' })).status).toBe(200)
    h.upstream.setResponder(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body: fixture('openai-responses/responses-nonstream-reasoning.json') }))
    expect((await postJson(`${t.url}/v1/responses`, { model: 'gpt-5-nano', input: 'hi' }, { authorization: 'Bearer sk-test-0000000000001' })).status).toBe(200)
    expect(await t.server.ledger.flushed()).toBe(true)
    const proxied = await store.all<any>('SELECT * FROM calls ORDER BY id')
    expect(proxied).toHaveLength(2)
    const body = JSON.parse(fixture('anthropic/messages-nonstream-basic.json').toString())
    const logs = join(t.dir, 'agent-logs')
    mkdirSync(join(logs, 'claude/p'), { recursive: true })
    writeFileSync(join(logs, 'claude/p/s.jsonl'), JSON.stringify({
      type: 'assistant', sessionId: 's1', cwd: '/home/dev/x', timestamp: new Date(proxied[0].ts + 900).toISOString(), requestId: 'req_1', message: body,
    }) + '\n')
    mkdirSync(join(logs, 'codex/2026'), { recursive: true })
    writeFileSync(join(logs, 'codex/2026/rollout-x.jsonl'), [
      { timestamp: new Date(proxied[1].ts).toISOString(), type: 'turn_context', payload: { model: 'gpt-5-nano', cwd: '/home/dev/y' } },
      { timestamp: new Date(proxied[1].ts + 2000).toISOString(), type: 'event_msg', payload: { type: 'token_count', info: {
        total_token_usage: { input_tokens: 11, cached_input_tokens: 0, output_tokens: 327, reasoning_output_tokens: 320, total_tokens: 338 },
        last_token_usage: { input_tokens: 11, cached_input_tokens: 0, output_tokens: 327, reasoning_output_tokens: 320, total_tokens: 338 } } } },
    ].map((x) => JSON.stringify(x)).join('\n') + '\n')
    const now = Date.now() + 60_000
    const pricer = new Pricer()
    const a = await importLogs(t.server.db, { agent: 'claude-code', paths: [join(logs, 'claude')], pricer, now, store, countSpend, moveSpend })
    const b = await importLogs(t.server.db, { agent: 'codex', paths: [join(logs, 'codex')], pricer, now, store, countSpend, moveSpend })
    expect([a.matched, a.imported, b.matched, b.imported]).toEqual([1, 0, 1, 0])
    expect((await store.get<{ n: number }>('SELECT count(*) AS n FROM calls'))!.n).toBe(2)
    expect(t.server.db.prepare('SELECT call_id FROM import_keys ORDER BY call_id').pluck().all()).toEqual(proxied.map((p) => p.id))
  })

  it('matches a Claude Code message with no id to its call proxied through Microsoft Foundry (provider foundry), by its counts', async () => {
    const url = h.database()
    const store = h.store(url)
    const t = await h.server({ url })
    h.upstream.setResponder(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body: fixture('anthropic/messages-nonstream-basic.json') }))
    expect((await postJson(`${t.url}/foundry/anthropic/v1/messages`, { model: 'claude-sonnet-4-5', messages: [] }, { 'x-api-key': 'foundry-key-0000000000001' })).status).toBe(200)
    expect(await t.server.ledger.flushed()).toBe(true)
    const proxied = await store.all<any>('SELECT * FROM calls ORDER BY id')
    expect(proxied).toMatchObject([{ provider: 'foundry' }])
    const { id: _id, ...message } = JSON.parse(fixture('anthropic/messages-nonstream-basic.json').toString())
    const logs = join(t.dir, 'agent-logs')
    mkdirSync(join(logs, 'claude/p'), { recursive: true })
    writeFileSync(join(logs, 'claude/p/s.jsonl'), JSON.stringify({
      type: 'assistant', sessionId: 's1', uuid: 'u1', cwd: '/home/dev/x', timestamp: new Date(Number(proxied[0].ts) + 900).toISOString(), message,
    }) + '\n')
    const a = await importLogs(t.server.db, { agent: 'claude-code', paths: [join(logs, 'claude')], pricer: new Pricer(), now: Date.now() + 60_000, store, countSpend, moveSpend })
    expect([a.matched, a.imported]).toEqual([1, 0])
    expect((await store.get<{ n: number }>('SELECT count(*) AS n FROM calls'))!.n).toBe(1)
  })

  it("an import beside a running server (as `burnrate import` runs) reaches the server's budget meters as soon as it is stored", async () => {
    const url = h.database()
    const store = h.store(url)
    // Imported calls carry no key: a `*` rule counts them.
    const t = await h.server({ url, config: { budgets: { rules: [{ api_key_pattern: '*', monthly_limit_usd: 1000, action: 'warn' }] } }, upstream: null })
    const { budgetsOf } = await import('../../src/main/budgets')
    const feed = budgetsOf(t.server.context).feed!
    await eventually(() => feed.stats.reloads > 0, 20_000)
    const listed = async () => {
      const body = (await request(`${t.url}/api/dashboard/budgets`)).json()
      return body.rules.find((r: any) => r.rule.api_key_pattern === '*' && r.api_key_hash === '')?.windows.find((w: any) => w.period === 'monthly')?.spent_usd ?? 0
    }
    expect(await listed()).toBe(0)
    const heard = feed.stats.counted
    const dir = h.tempDir('burnrate-pg-import-cli-')
    // The sample logs, moved to end a minute ago (or at this month's start): the latest call is in this month's window.
    const now = Date.now()
    const month = new PeriodClock('UTC').monthOf(now)
    const logs = join(dir, 'projects')
    copyLogsEndingAt(join(LOGS, 'claude-code/projects'), logs, Math.max(month.start, now - 60_000))
    const s = await importLogs(openDatabase(join(dir, 'cli.db')), { agent: 'claude-code', paths: [logs], pricer: new Pricer(), store, countSpend, moveSpend })
    expect(s.imported).toBe(3)
    // The monthly window counts the calls of this month (on a month's first day, the others may be of the month before).
    const stored = (await store.get<{ c: number }>("SELECT sum(cost_usd) AS c FROM calls WHERE source = 'import' AND ts >= @start", { start: month.start }))!.c
    expect(stored).toBeGreaterThan(0)
    await eventually(async () => Math.abs((await listed()) - stored) <= 1e-12, 20_000)
    // Heard from the import's own transaction (a re-read that came meanwhile would find it too).
    expect(feed.stats.counted).toBeGreaterThan(heard)
  })

  it('a log entry older than what retention pruned is not imported again: its proxied twin is gone, the rollups count it', async () => {
    const url = h.database()
    const store = h.store(url)
    const t = await h.server({ url, upstream: null })
    expect(await t.server.ledger.flushed()).toBe(true) // its schema made
    const now = Date.now()
    const old = now - 60 * 86_400_000
    // The proxied call, stored 60 days ago with its rollups (as a ledger batch stores it).
    await store.transaction(async (tx) => {
      const s = await insertCalls(tx, [makeCall({ ts: old, provider: 'anthropic', model: 'claude-sonnet-4-5', endpoint: 'messages', agent: 'claude-code',
        source: 'proxy', response_id: 'msg_OLD', input_tokens: 1000, output_tokens: 200, cost_usd: 0.006, call_key: 'proxy-old-1' })])
      await applyRollups(tx, s)
    })
    // Retention (`ledger.retention_days: 40`) deletes the raw call; the rollups keep it.
    expect(await t.server.ledger.prune(now - 40 * 86_400_000, 1000)).toBe(1)
    const dir = h.tempDir('burnrate-pg-import-expired-')
    mkdirSync(join(dir, 'projects/p'), { recursive: true })
    writeFileSync(join(dir, 'projects/p/s.jsonl'), JSON.stringify({
      type: 'assistant', sessionId: 's', cwd: '/home/dev/x', timestamp: new Date(old + 500).toISOString(), requestId: 'req_1',
      message: { id: 'msg_OLD', model: 'claude-sonnet-4-5', usage: { input_tokens: 1000, output_tokens: 200 } },
    }) + '\n')
    const cli = openDatabase(join(dir, 'cli.db'))
    const s = await importLogs(cli, { agent: 'claude-code', paths: [join(dir, 'projects')], pricer: new Pricer(), store, countSpend, moveSpend })
    cli.close()
    expect(s).toMatchObject({ expired: 1, imported: 0 })
    expect((await store.get<{ n: number }>('SELECT count(*) AS n FROM calls'))!.n).toBe(0)
    expect(Number((await store.get<{ n: number }>('SELECT sum(requests) AS n FROM dash_day'))!.n)).toBe(1)
  })

  it("a log entry whose proxied twin another instance's retention prunes while it is imported is not counted twice", async () => {
    const url = h.database()
    const store = h.store(url)
    const t = await h.server({ url, upstream: null })
    expect(await t.server.ledger.flushed()).toBe(true) // its schema made
    // Stopped: its own reads of the calls (budget meters, the pruner) would wait on the lock below
    // too, and the wait for the import's one waiting lock would never see exactly one.
    await t.stop()
    const now = Date.now()
    const old = now - 60 * 86_400_000
    await store.transaction(async (tx) => {
      const s = await insertCalls(tx, [makeCall({ ts: old, provider: 'openai', model: 'gpt-5-nano', endpoint: 'responses', agent: 'codex',
        source: 'proxy', response_id: '', input_tokens: 1000, output_tokens: 200, cost_usd: 0.006, call_key: 'proxy-old-race' })])
      await applyRollups(tx, s)
    })
    const dir = h.tempDir('burnrate-pg-import-prune-race-')
    const cli = openDatabase(join(dir, 'cli.db'))
    // Codex logs no response id: the twin is looked for by its counts and time.
    const logged: LoggedCall = {
      key: 'codex:race:1', ts: old + 2000, provider: 'openai', pricingId: 'openai', model: 'gpt-5-nano', session: 's', project: '',
      usage: { ...emptyUsage(), input_tokens: 1000, output_tokens: 200 }, response_id: '', endpoint: 'responses',
    }
    // Another instance's retention step (`ledger.retention_days: 40`) commits just as the import
    // looks for the twin: held there by a lock on the calls, and its statements run meanwhile.
    const hold = await store.pool.connect()
    let importing: Promise<unknown> | undefined
    try {
      await hold.query('BEGIN')
      await hold.query('LOCK TABLE calls IN ACCESS EXCLUSIVE MODE')
      importing = storeCalls(cli, [logged], { agent: 'codex', pricer: new Pricer(), store, countSpend, moveSpend })
      await eventually(async () =>
        Number((await store.get<{ n: number }>("SELECT count(*) AS n FROM pg_locks WHERE NOT granted AND relation = 'calls'::regclass"))!.n) === 1 || undefined,
      )
      expect(await hold.query("DELETE FROM calls WHERE call_key = 'proxy-old-race'")).toMatchObject({ rowCount: 1 })
      await hold.query('UPDATE retention_state SET pruned_before = GREATEST(pruned_before, $1) WHERE id = 1', [now - 40 * 86_400_000])
      await hold.query('COMMIT')
    } finally {
      hold.release()
    }
    const stats = await importing
    cli.close()
    expect(stats).toMatchObject({ imported: 0 })
    expect((await store.get<{ n: number }>('SELECT count(*) AS n FROM calls'))!.n).toBe(0)
    expect(Number((await store.get<{ n: number }>('SELECT sum(requests) AS n FROM dash_day'))!.n)).toBe(1)
  })

  it('an answer imported while still being written takes its final usage: the call, the rollups and the budget meters', async () => {
    const url = h.database()
    const store = h.store(url)
    const t = await h.server({ url, config: { budgets: { rules: [{ api_key_pattern: '*', monthly_limit_usd: 1000, action: 'warn' }] } }, upstream: null })
    const { budgetsOf } = await import('../../src/main/budgets')
    const feed = budgetsOf(t.server.context).feed!
    await eventually(() => feed.stats.reloads > 0, 20_000)
    const listed = async () => {
      const body = (await request(`${t.url}/api/dashboard/budgets`)).json()
      return body.rules.find((r: any) => r.rule.api_key_pattern === '*' && r.api_key_hash === '')?.windows.find((w: any) => w.period === 'monthly')?.spent_usd ?? 0
    }
    const now = Date.now()
    const ts = Math.max(new PeriodClock('UTC').monthOf(now).start, now - 60_000)
    const dir = h.tempDir('burnrate-pg-import-partial-')
    mkdirSync(join(dir, 'projects/p'), { recursive: true })
    const line = (out: number) => JSON.stringify({
      type: 'assistant', sessionId: 's', cwd: '/home/dev/x', timestamp: new Date(ts).toISOString(), requestId: 'req_1',
      message: { id: 'msg_PARTIAL', model: 'claude-sonnet-4-5', usage: { input_tokens: 10, cache_read_input_tokens: 20000, output_tokens: out } },
    }) + '\n'
    const f = join(dir, 'projects/p/s.jsonl')
    const cli = openDatabase(join(dir, 'cli.db'))
    const pricer = new Pricer()
    writeFileSync(f, line(8))
    expect(await importLogs(cli, { agent: 'claude-code', paths: [join(dir, 'projects')], pricer, store, countSpend, moveSpend })).toMatchObject({ imported: 1 })
    writeFileSync(f, line(8) + line(2400))
    expect(await importLogs(cli, { agent: 'claude-code', paths: [join(dir, 'projects')], pricer, store, countSpend, moveSpend })).toMatchObject({ imported: 0, updated: 1 })
    cli.close()
    const call = (await store.get<any>('SELECT output_tokens, cost_usd FROM calls'))!
    expect(call.output_tokens).toBe(2400)
    const day = (await store.get<any>('SELECT sum(output_tokens) AS o, sum(cost_usd) AS c FROM dash_day'))!
    expect(Number(day.o)).toBe(2400)
    expect(Number(day.c)).toBeCloseTo(call.cost_usd, 12)
    // The server's meters (told through the calls feed) count the final cost.
    await eventually(async () => Math.abs((await listed()) - call.cost_usd) <= 1e-12, 20_000)
  })
})
