import { appendFileSync, cpSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { LogWatcher } from '../../src/main/import/watcher'
import { silentLogger } from '../../src/main/log'
import { Pricer } from '../../src/main/pricing/price'
import { fixture } from '../support/fixtures'
import { postJson, request } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'

let t: TestServer
let home: string

beforeAll(async () => {
  t = await startTestServer({ import: { watch: false } })
  home = mkdtempSync(join(tmpdir(), 'burnrate-watch-home-'))
  mkdirSync(join(home, '.claude'), { recursive: true })
  cpSync(resolve(__dirname, '../fixtures/agent-logs/claude-code'), join(home, '.claude'), { recursive: true })
})
afterAll(async () => {
  await t.cleanup()
  rmSync(home, { recursive: true, force: true })
})

describe('watching the agents\' log folders', () => {
  it('imports what is in the standard folders, then only new entries as they appear; budgets see them', async () => {
    const { db, ledger } = t.server
    const w = new LogWatcher({ db, ledger, pricer: new Pricer(), log: silentLogger, env: {}, home, settleMs: 0 })
    const first = await w.runOnce()
    expect(first.find((s) => s.agent === 'claude-code')).toMatchObject({ imported: 3 })
    expect(first.find((s) => s.agent === 'codex')?.missing.length).toBe(2)
    const file = join(home, '.claude/projects/-home-dev-shop/6f1c2a9e-3b4d-4c1e-9a7f-0d2b8c5e1f40.jsonl')
    const ts = Date.now() - 60_000
    appendFileSync(file, '\n' + JSON.stringify({
      type: 'assistant', sessionId: 'live', cwd: '/home/dev/shop', timestamp: new Date(ts).toISOString(),
      message: { id: 'msg_live', model: 'claude-haiku-4-5-20251001', usage: { input_tokens: 1000, output_tokens: 100 } },
    }) + '\n')
    const second = await w.runOnce()
    expect(second.find((s) => s.agent === 'claude-code')).toMatchObject({ imported: 1, unchanged: 1 })
    expect(db.prepare("SELECT count(*) FROM calls WHERE source = 'import'").pluck().get()).toBe(4)
    // Today's imported spend is in the tracker the budgets read.
    const cost = db.prepare("SELECT cost_usd FROM calls WHERE response_id = 'msg_live'").pluck().get() as number
    expect(cost).toBeGreaterThan(0)
    expect(ledger.spend.key('').month).toBeGreaterThanOrEqual(cost)
    await w.stop()
  })
})

describe('imported calls and the budget rules', () => {
  let b: TestServer
  let bhome: string
  let upstream: MockUpstream
  beforeAll(async () => {
    upstream = await startMockUpstream(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body: fixture('openai-chat/chat-nonstream-cached.json') }))
    // A `*` rule (imported calls carry no key) whose daily limit one imported call exceeds.
    b = await startTestServer({ import: { watch: false }, budgets: { rules: [{ api_key_pattern: '*', daily_limit_usd: 0.001, action: 'block' }] } }, upstream.url)
    bhome = mkdtempSync(join(tmpdir(), 'burnrate-watch-budget-'))
    mkdirSync(join(bhome, '.claude/projects/-home-dev-shop'), { recursive: true })
  })
  afterAll(async () => {
    await b.cleanup()
    await upstream.close()
    rmSync(bhome, { recursive: true, force: true })
  })

  it('count in the meters as soon as they are imported, not at the next restart or rule change', async () => {
    const { db, ledger, context } = b.server
    const file = join(bhome, '.claude/projects/-home-dev-shop/budget.jsonl')
    appendFileSync(file, JSON.stringify({
      type: 'assistant', sessionId: 'outside', cwd: '/home/dev/shop', timestamp: new Date(Date.now() - 60_000).toISOString(),
      message: { id: 'msg_outside_proxy', model: 'claude-haiku-4-5-20251001', usage: { input_tokens: 100_000, output_tokens: 10_000 } },
    }) + '\n')
    const w = new LogWatcher({ db, ledger, pricer: new Pricer(), log: silentLogger, env: {}, home: bhome, settleMs: 0, budgets: () => context.budgets })
    const pass = await w.runOnce()
    await w.stop()
    expect(pass.find((s) => s.agent === 'claude-code')).toMatchObject({ imported: 1 })
    const cost = db.prepare("SELECT cost_usd FROM calls WHERE response_id = 'msg_outside_proxy'").pluck().get() as number
    expect(cost).toBeGreaterThan(0.001)
    // Limits are per key, and an imported call has none: it counts for calls without a key (a
    // local provider, say). The day's spend is over the limit: the next such call is refused
    // before it goes upstream, and the budgets listing shows the imported spend.
    const r = await postJson(`${b.url}/v1/chat/completions`, { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] })
    expect(r.status).toBe(429)
    expect(r.json().error.type).toBe('budget_exceeded')
    expect(upstream.requests).toHaveLength(0)
    const listed = (await request(`${b.url}/api/dashboard/budgets`)).json()
    const daily = listed.rules[0].windows.find((x: { period: string }) => x.period === 'daily')
    expect(daily.spent_usd).toBe(cost)
  })
})
