import { appendFileSync, cpSync, mkdtempSync, rmSync, writeFileSync, mkdirSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import BetterSqlite from 'better-sqlite3'
import type Database from 'better-sqlite3'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { importLogs } from '../../src/main/import/importer'
import { openDatabase } from '../../src/main/ledger/db'
import { Pricer } from '../../src/main/pricing/price'
import { fixture } from '../support/fixtures'
import { postJson } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'

/** Sample logs in each agent's real format (test/fixtures/agent-logs), copied so a test may append to them. */
const LOGS = resolve(__dirname, '../fixtures/agent-logs')
const pricer = new Pricer()
let dir: string
let db: Database.Database

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'burnrate-import-'))
  cpSync(LOGS, join(dir, 'logs'), { recursive: true })
  db = openDatabase(join(dir, 'burnrate.db'))
})
afterAll(() => {
  db.close()
  rmSync(dir, { recursive: true, force: true })
})

const rows = (agent: string) => db.prepare('SELECT * FROM calls WHERE agent = ? ORDER BY ts').all(agent) as any[]
const count = () => (db.prepare('SELECT count(*) FROM calls').pluck().get() as number)

describe('importing the agents\' own logs', () => {
  it('Claude Code: one call per message id (its largest usage), malformed and truncated lines skipped and counted, side-question replays once', async () => {
    const s = await importLogs(db, { agent: 'claude-code', paths: [join(dir, 'logs/claude-code/projects')], pricer })
    expect(s).toMatchObject({ files: 2, imported: 3, duplicates: 1, matched: 0, skipped_lines: 2 })
    const r = rows('claude-code')
    expect(r.map((x) => x.response_id)).toEqual(['msg_01ShopA', 'msg_01Side', 'msg_01ShopB'])
    expect(r[0]).toMatchObject({
      source: 'import', provider: 'anthropic', model: 'claude-sonnet-4-5-20250929', project: '/home/dev/shop',
      session: '6f1c2a9e-3b4d-4c1e-9a7f-0d2b8c5e1f40', input_tokens: 4 + 2318 + 14071, cache_read_tokens: 14071,
      cache_write_tokens: 2318, output_tokens: 389, ts: Date.parse('2026-11-20T10:15:02.345Z'), priced: 1,
    })
    const want = pricer.price('anthropic', 'anthropic', 'claude-sonnet-4-5-20250929', {
      input_tokens: 16393, output_tokens: 389, cache_read_tokens: 14071, cache_write_tokens: 2318, cache_write_1h_tokens: 0, reasoning_tokens: 0, web_searches: 0, storage_searches: 0,
    }, new Date(r[0].ts))
    expect(r[0].cost_usd).toBe(want.cost_usd)
    expect(r[0].cost_usd).toBeGreaterThan(0)
  })

  it('Codex: each token_count event once (a repeated total is not a call), model from turn_context, project from the session', async () => {
    const s = await importLogs(db, { agent: 'codex', paths: [join(dir, 'logs/codex/sessions')], pricer })
    expect(s).toMatchObject({ files: 1, imported: 2, skipped_lines: 1 })
    const r = rows('codex')
    expect(r[0]).toMatchObject({
      provider: 'openai', model: 'gpt-5-codex', project: '/home/dev/api', session: '019a9f3e-7c21-7b10-9e3c-5f2d1a0b4c66',
      input_tokens: 5120, cache_read_tokens: 3072, output_tokens: 410, reasoning_tokens: 256, endpoint: 'responses',
    })
    expect(r[1]).toMatchObject({ input_tokens: 6200, cache_read_tokens: 5120, output_tokens: 95 })
  })

  it('Gemini CLI: the last copy of each message, thoughts billed as output, project from .project_root', async () => {
    const s = await importLogs(db, { agent: 'gemini-cli', paths: [join(dir, 'logs/gemini-cli/tmp')], pricer })
    expect(s).toMatchObject({ files: 1, imported: 2, skipped_lines: 1 })
    const r = rows('gemini-cli')
    expect(r[0]).toMatchObject({
      provider: 'gemini', model: 'gemini-2.5-pro', project: '/home/dev/shop', session: '4f7d2c1a-8e6b-4a9d-b3c2-1e0f9a8b7c6d',
      input_tokens: 8200, cache_read_tokens: 4096, output_tokens: 310 + 512, reasoning_tokens: 512, priced: 1,
    })
    expect(r[1]).toMatchObject({ model: 'gemini-2.5-flash', input_tokens: 9100 + 640, output_tokens: 120 })
  })

  it('opencode: assistant messages, cache and reasoning added back into input and output', async () => {
    const s = await importLogs(db, { agent: 'opencode', paths: [join(dir, 'logs/opencode')], pricer })
    expect(s).toMatchObject({ files: 4, imported: 2, skipped_lines: 1 })
    const r = rows('opencode')
    expect(r[0]).toMatchObject({
      provider: 'anthropic', model: 'claude-sonnet-4-5-20250929', project: '/home/dev/site', session: 'ses_5a1b2c3d4e',
      input_tokens: 12 + 15000 + 1800, cache_read_tokens: 15000, cache_write_tokens: 1800, output_tokens: 240,
    })
    expect(r[1]).toMatchObject({ provider: 'openai', model: 'gpt-5', input_tokens: 4024, cache_read_tokens: 1024, output_tokens: 328, reasoning_tokens: 128 })
  })

  it('opencode: newer versions keep messages in opencode.db; a row that is not JSON is counted', async () => {
    const root = join(dir, 'opencode-db')
    mkdirSync(root)
    const oc = new BetterSqlite(join(root, 'opencode.db'))
    oc.exec('CREATE TABLE message (id TEXT PRIMARY KEY, session_id TEXT NOT NULL, time_created INTEGER, data TEXT NOT NULL)')
    const add = oc.prepare('INSERT INTO message (id, session_id, data) VALUES (?, ?, ?)')
    add.run('msg_db1', 'ses_db', JSON.stringify({
      role: 'assistant', providerID: 'google', modelID: 'gemini-2.5-flash', path: { cwd: '/home/dev/db', root: '/home/dev/db' },
      time: { created: 1763720000000, completed: 1763720003000 }, tokens: { input: 900, output: 80, reasoning: 20, cache: { read: 100, write: 0 } },
    }))
    add.run('msg_db2', 'ses_db', '{"role":"assist')
    oc.close()
    const s = await importLogs(db, { agent: 'opencode', paths: [root], pricer })
    expect(s).toMatchObject({ files: 1, imported: 1, skipped_lines: 1 })
    expect(db.prepare("SELECT * FROM calls WHERE session = 'ses_db'").get()).toMatchObject({
      provider: 'gemini', model: 'gemini-2.5-flash', project: '/home/dev/db', input_tokens: 1000, cache_read_tokens: 100, output_tokens: 100, reasoning_tokens: 20, priced: 1,
    })
  })

  it('is idempotent: unchanged files are not read again, and a changed file adds only its new calls', async () => {
    const before = count()
    const again = await importLogs(db, { agent: 'claude-code', paths: [join(dir, 'logs/claude-code/projects')], pricer })
    expect(again).toMatchObject({ files: 0, unchanged: 2, imported: 0 })
    const file = join(dir, 'logs/claude-code/projects/-home-dev-shop/6f1c2a9e-3b4d-4c1e-9a7f-0d2b8c5e1f40.jsonl')
    appendFileSync(file, '\n' + JSON.stringify({
      type: 'assistant', cwd: '/home/dev/shop', sessionId: 's', timestamp: '2026-11-22T10:00:00.000Z',
      message: { id: 'msg_01New', model: 'claude-haiku-4-5-20251001', usage: { input_tokens: 10, output_tokens: 5 } },
    }) + '\n')
    const changed = await importLogs(db, { agent: 'claude-code', paths: [join(dir, 'logs/claude-code/projects')], pricer })
    expect(changed).toMatchObject({ files: 1, unchanged: 1, imported: 1, duplicates: 2 })
    expect(count()).toBe(before + 1)
    // The rollups the dashboard reads moved with the calls.
    const rolled = db.prepare('SELECT sum(requests) FROM dash_day').pluck().get()
    expect(rolled).toBe(count())
  })

  it('calls younger than the settle time wait for a later run (the proxy may still be streaming them)', async () => {
    const root = join(dir, 'settle')
    mkdirSync(join(root, 'p'), { recursive: true })
    const now = Date.parse('2026-11-22T12:00:00.000Z')
    writeFileSync(join(root, 'p/s.jsonl'), [
      { ts: now - 3_600_000, id: 'msg_old' }, { ts: now - 1_000, id: 'msg_young' },
    ].map((c) => JSON.stringify({ type: 'assistant', sessionId: 's', timestamp: new Date(c.ts).toISOString(), message: { id: c.id, model: 'claude-haiku-4-5-20251001', usage: { input_tokens: 3, output_tokens: 4 } } })).join('\n') + '\n')
    const first = await importLogs(db, { agent: 'claude-code', paths: [root], pricer, settleMs: 600_000, now })
    expect(first).toMatchObject({ imported: 1, deferred: 1 })
    const later = await importLogs(db, { agent: 'claude-code', paths: [root], pricer, settleMs: 600_000, now: now + 700_000 })
    expect(later).toMatchObject({ imported: 1, duplicates: 1, deferred: 0 })
  })

  it('Claude Code: web searches in the log are charged and kept with the call (usage_extra), so re-pricing charges them again', async () => {
    const root = join(dir, 'searches')
    mkdirSync(join(root, 'p'), { recursive: true })
    const ts = '2026-11-21T09:00:00.000Z'
    writeFileSync(join(root, 'p/s.jsonl'), JSON.stringify({
      type: 'assistant', cwd: '/home/dev/shop', sessionId: 'searches', timestamp: ts,
      message: { id: 'msg_01Search', model: 'claude-sonnet-4-5-20250929', usage: { input_tokens: 1000, output_tokens: 200, server_tool_use: { web_search_requests: 3 } } },
    }) + '\n')
    expect(await importLogs(db, { agent: 'claude-code', paths: [root], pricer })).toMatchObject({ imported: 1 })
    const r = db.prepare("SELECT * FROM calls WHERE response_id = 'msg_01Search'").get() as any
    expect(JSON.parse(r.usage_extra)).toEqual({ web_searches: 3 })
    // Sonnet 4.5: $3 input and $15 output per million tokens, $10 per 1,000 searches.
    expect(r.cost_usd).toBeCloseTo((1000 * 3 + 200 * 15) / 1e6 + 3 * 0.01, 15)
  })

  it('a missing folder is reported, not an error', async () => {
    const s = await importLogs(db, { agent: 'codex', paths: [join(dir, 'nope')], pricer })
    expect(s.missing).toEqual([join(dir, 'nope')])
  })
})

describe('a call seen both through the proxy and in a log counts once', () => {
  let upstream: MockUpstream
  let t: TestServer
  beforeAll(async () => {
    upstream = await startMockUpstream()
    t = await startTestServer({}, upstream.url)
  })
  afterAll(async () => {
    await t.cleanup()
    await upstream.close()
  })

  it('matched exactly by the provider\'s message id (Claude Code), or by provider, tokens and time (Codex)', async () => {
    upstream.setResponder(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body: fixture('anthropic/messages-nonstream-basic.json') }))
    expect((await postJson(`${t.url}/anthropic/v1/messages`, { model: 'claude-sonnet-4-5', messages: [] }, { 'x-api-key': 'sk-ant-test-000000000001', 'x-burnrate-project': '/home/dev/x' })).status).toBe(200)
    upstream.setResponder(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body: fixture('openai-responses/responses-nonstream-reasoning.json') }))
    expect((await postJson(`${t.url}/v1/responses`, { model: 'gpt-5-nano', input: 'hi' }, { authorization: 'Bearer sk-test-0000000000001' })).status).toBe(200)
    t.server.ledger.flush()
    const db2 = t.server.db
    const proxied = db2.prepare('SELECT * FROM calls ORDER BY id').all() as any[]
    expect(proxied).toHaveLength(2)
    expect(proxied[0]).toMatchObject({ project: '/home/dev/x', response_id: 'msg_01VdEjxAP5ahtHKrrRdNBteQ' })
    const body = JSON.parse(fixture('anthropic/messages-nonstream-basic.json').toString())
    const logs = join(t.dir, 'agent-logs')
    mkdirSync(join(logs, 'claude/p'), { recursive: true })
    writeFileSync(join(logs, 'claude/p/s.jsonl'), JSON.stringify({
      type: 'assistant', sessionId: 's1', cwd: '/home/dev/x', timestamp: new Date(proxied[0].ts + 900).toISOString(),
      requestId: 'req_1', message: body,
    }) + '\n')
    mkdirSync(join(logs, 'codex/2026'), { recursive: true })
    writeFileSync(join(logs, 'codex/2026/rollout-x.jsonl'), [
      { timestamp: new Date(proxied[1].ts).toISOString(), type: 'turn_context', payload: { model: 'gpt-5-nano', cwd: '/home/dev/y' } },
      { timestamp: new Date(proxied[1].ts + 2000).toISOString(), type: 'event_msg', payload: { type: 'token_count', info: {
        total_token_usage: { input_tokens: 11, cached_input_tokens: 0, output_tokens: 327, reasoning_output_tokens: 320, total_tokens: 338 },
        last_token_usage: { input_tokens: 11, cached_input_tokens: 0, output_tokens: 327, reasoning_output_tokens: 320, total_tokens: 338 } } } },
    ].map((x) => JSON.stringify(x)).join('\n') + '\n')
    const now = Date.now() + 60_000
    const a = await importLogs(db2, { agent: 'claude-code', paths: [join(logs, 'claude')], pricer, now })
    const b = await importLogs(db2, { agent: 'codex', paths: [join(logs, 'codex')], pricer, now })
    expect([a.matched, a.imported, b.matched, b.imported]).toEqual([1, 0, 1, 0])
    expect(db2.prepare('SELECT count(*) FROM calls').pluck().get()).toBe(2)
  })
})
