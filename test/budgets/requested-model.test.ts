import Database from 'better-sqlite3'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { hashKey } from '../../src/main/proxy/attribution'
import { ADMIN_CONFIG, admin } from '../admin/support'
import { getJson } from '../dashboard/seed'
import { eventually, postJson, type Reply } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'
import { chatAnswer } from '../pricing/support'
import { spillWithRequestedModel } from './requested-model-support'
import { NANO_COST, NANO_FIXTURE, fixtureModel, replayJson } from './support'

/**
 * README: Budgets → "`model_pattern` is matched against the model the request names and the model
 * the response reports". The recorded fixture's request names `gpt-5-nano`, its answer the dated
 * `gpt-5-nano-2025-08-07`: a rule `model_pattern: gpt-5-nano` (exact) matches those calls only by
 * the model they requested. The meters rebuilt from the ledger (every start, every rule change)
 * must still count them, and re-pricing them must move that rule's meters.
 */

const ANSWERED = fixtureModel(NANO_FIXTURE)
/** Room for one call: the second finds the limit reached. */
const LIMIT = NANO_COST * 0.75

let upstream: MockUpstream
const servers: TestServer[] = []

beforeAll(async () => {
  upstream = await startMockUpstream()
  replayJson(upstream, NANO_FIXTURE)
})
afterAll(async () => {
  for (const t of servers) await t.cleanup().catch(() => {})
  await upstream?.close()
})

async function server(rules: unknown[]): Promise<TestServer> {
  const t = await startTestServer({ ...ADMIN_CONFIG, timezone: 'UTC', budgets: { rules } }, upstream.url)
  servers.push(t)
  return t
}

const chat = (t: TestServer, key: string, model = 'gpt-5-nano', session = ''): Promise<Reply> =>
  postJson(`${t.url}/v1/chat/completions`, { model, messages: [{ role: 'user', content: 'hi' }], max_completion_tokens: 300 }, {
    authorization: `Bearer ${key}`,
    ...(session ? { 'x-burnrate-session': session } : {}),
  })

/** What the dashboard's budget listing says a rule has counted for a key, per period. */
async function windows(t: TestServer, pattern: string, key: string): Promise<{ period: string; spent_usd: number }[] | null> {
  const body = (await getJson(`${t.url}/api/dashboard/budgets`)).body
  return body.rules.find((r: any) => r.rule.api_key_pattern === pattern && r.api_key_hash === hashKey(key))?.windows ?? null
}

describe('a rule that matches calls by the model they requested (SQLite)', () => {
  const periods: [string, Record<string, unknown>][] = [
    ['daily', { daily_limit_usd: LIMIT }],
    ['weekly', { weekly_limit_usd: LIMIT }],
    ['monthly', { monthly_limit_usd: LIMIT }],
    ['window', { window_hours: 5, window_limit_usd: LIMIT }],
    ['session', { session_limit_usd: LIMIT }],
  ]

  it('keeps refusing after a rule change and after a restart, for every period', async () => {
    const rules = periods.map(([p, limit]) => ({ api_key_pattern: `sk-rq-${p}-*`, model_pattern: 'gpt-5-nano', action: 'block', ...limit }))
    let t = await server(rules)
    const keys = periods.map(([p]) => `sk-rq-${p}-aaaaaaaa-0001`)
    for (const key of keys) {
      const first = await chat(t, key, 'gpt-5-nano', 'sess-1')
      expect(first.status).toBe(200)
      expect(first.json().model).toBe(ANSWERED)
      expect(await t.server.ledger.flushed()).toBe(true)
      expect((await chat(t, key, 'gpt-5-nano', 'sess-1')).status).toBe(429)
    }
    // The meters are rebuilt from the ledger when any rule changes...
    expect((await admin(t.url, 'POST', '/budgets/rules', { body: { api_key_pattern: 'sk-unrelated-*', daily_limit_usd: 1, action: 'warn' } })).status).toBe(201)
    for (const [i, key] of keys.entries()) {
      const r = await chat(t, key, 'gpt-5-nano', 'sess-1')
      expect(r.status, periods[i][0]).toBe(429)
      expect(r.json().error).toMatchObject({ type: 'budget_exceeded', period: periods[i][0], spent_usd: NANO_COST })
    }
    // ...and at start-up.
    t = await t.restart()
    servers.push(t)
    for (const [i, key] of keys.entries()) {
      const r = await chat(t, key, 'gpt-5-nano', 'sess-1')
      expect(r.status, periods[i][0]).toBe(429)
      expect(r.json().error).toMatchObject({ type: 'budget_exceeded', period: periods[i][0], spent_usd: NANO_COST })
    }
  }, 60_000)

  it('a rule naming only the model the answers name decides the calls it counts (refused once it is reached)', async () => {
    // The calls request `gpt-5-nano`; the rule names the dated model they are answered as (or an
    // Azure deployment's model): it counted them and the dashboard said blocked, but it never
    // decided one, so they all went through.
    const t = await server([{ api_key_pattern: 'sk-rq-answered-*', model_pattern: ANSWERED, daily_limit_usd: LIMIT, action: 'block' }])
    const key = 'sk-rq-answered-aaaaaaaa-0001'
    expect((await chat(t, key)).status).toBe(200)
    expect(await t.server.ledger.flushed()).toBe(true)
    expect(await windows(t, 'sk-rq-answered-*', key)).toMatchObject([{ period: 'daily', spent_usd: NANO_COST }])
    const r = await chat(t, key)
    expect(r.status).toBe(429)
    expect(r.json().error).toMatchObject({ type: 'budget_exceeded', api_key_pattern: 'sk-rq-answered-*', period: 'daily', spent_usd: NANO_COST })
  })

  it('the same after a restart: the ledger says which model the name was answered as, so the calls that follow are refused at once', async () => {
    const rules = [{ api_key_pattern: 'sk-rq-restart-*', model_pattern: ANSWERED, daily_limit_usd: LIMIT, action: 'block' }]
    const t = await server(rules)
    const key = 'sk-rq-restart-aaaaaaaa-0001'
    expect((await chat(t, key)).status).toBe(200)
    expect(await t.server.ledger.flushed()).toBe(true)
    await t.stop()
    // The same data folder: its ledger holds the call, answered as the dated model.
    const again = await startTestServer({ ...ADMIN_CONFIG, timezone: 'UTC', budgets: { rules } }, upstream.url, t.dir)
    servers.push(again)
    // Before this process has answered one itself: a burst of the key's calls, every one refused.
    const burst = await Promise.all(Array.from({ length: 5 }, () => chat(again, key)))
    expect(burst.map((r) => r.status)).toEqual([429, 429, 429, 429, 429])
  })

  it('the meters rebuilt from the ledger count a call by the model it requested, and not one that named neither', async () => {
    const t = await server([
      { api_key_pattern: 'sk-rqx-*', model_pattern: 'gpt-5-nano', daily_limit_usd: 100, action: 'warn' },
      { api_key_pattern: 'sk-rqy-*', model_pattern: 'gpt-5-mini', daily_limit_usd: 100, action: 'warn' },
    ])
    const x = 'sk-rqx-aaaaaaaa-0001'
    const y = 'sk-rqy-aaaaaaaa-0001'
    expect((await chat(t, x)).status).toBe(200)
    expect((await chat(t, x, ANSWERED)).status).toBe(200)
    // The request names gpt-5-mini, the answer gpt-5-nano-…: counted by the gpt-5-mini rule.
    expect((await chat(t, y, 'gpt-5-mini')).status).toBe(200)
    expect((await chat(t, y, 'gpt-4o')).status).toBe(200)
    expect(await t.server.ledger.flushed()).toBe(true)
    // Stored: the requested model where the answer named another, else NULL.
    const db = new Database(t.dbFile, { readonly: true })
    const stored = db.prepare('SELECT api_key_hash, model, requested_model FROM calls ORDER BY id').all()
    db.close()
    expect(stored).toEqual([
      { api_key_hash: hashKey(x), model: ANSWERED, requested_model: 'gpt-5-nano' },
      { api_key_hash: hashKey(x), model: ANSWERED, requested_model: null },
      { api_key_hash: hashKey(y), model: ANSWERED, requested_model: 'gpt-5-mini' },
      { api_key_hash: hashKey(y), model: ANSWERED, requested_model: 'gpt-4o' },
    ])
    const spent = async (pattern: string, key: string) => (await windows(t, pattern, key))?.find((w) => w.period === 'daily')?.spent_usd
    await eventually(async () => (await spent('sk-rqx-*', x)) !== undefined && (await spent('sk-rqy-*', y)) !== undefined)
    // The exact `gpt-5-nano` rule: the first call by the model it requested; the second named
    // the dated model and was answered by it, neither of which is `gpt-5-nano`.
    expect(await spent('sk-rqx-*', x)).toBe(NANO_COST)
    expect(await spent('sk-rqy-*', y)).toBe(NANO_COST)
    expect((await admin(t.url, 'POST', '/budgets/rules', { body: { api_key_pattern: 'sk-unrelated-*', daily_limit_usd: 1, action: 'warn' } })).status).toBe(201)
    expect(await spent('sk-rqx-*', x)).toBe(NANO_COST)
    expect(await spent('sk-rqy-*', y)).toBe(NANO_COST)
  }, 60_000)
})

describe('a spill file (SQLite)', () => {
  it("an old file's calls load with no requested model; a new file's count by theirs", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'burnrate-rq-spill-'))
    const key = 'sk-rqs-aaaaaaaa-0001'
    spillWithRequestedModel(dir, key)
    const t = await startTestServer(
      { ...ADMIN_CONFIG, timezone: 'UTC', budgets: { rules: [{ api_key_pattern: 'sk-rqs-*', model_pattern: 'gpt-5-nano', daily_limit_usd: 0.001, action: 'block' }] } },
      upstream.url,
      dir,
    )
    servers.push(t)
    const db = new Database(t.dbFile, { readonly: true })
    const stored = db.prepare('SELECT model, requested_model FROM calls ORDER BY id').all()
    db.close()
    expect(stored).toEqual([{ model: ANSWERED, requested_model: null }, { model: ANSWERED, requested_model: 'gpt-5-nano' }])
    // The second call is the rule's (by the model it requested): its $0.001 is the whole limit.
    const r = await chat(t, key)
    expect(r.status).toBe(429)
    expect(r.json().error).toMatchObject({ period: 'daily', spent_usd: 0.001 })
  }, 60_000)
})

describe('re-pricing calls that a rule matches by the model they requested (SQLite)', () => {
  const REQUESTED = 'gpt-6.1-sol'
  const DATED = 'gpt-6.1-sol-2026-01-01' // unknown to the bundled prices: recorded unpriced, cost 0
  let t: TestServer
  let other: MockUpstream

  beforeAll(async () => {
    other = await startMockUpstream(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body: chatAnswer(DATED, 1_000_000, 100_000) }))
    t = await startTestServer(
      { ...ADMIN_CONFIG, timezone: 'UTC', budgets: { rules: [{ api_key_pattern: 'sk-rqp-*', model_pattern: REQUESTED, daily_limit_usd: 5, action: 'block' }] } },
      other.url,
    )
    servers.push(t)
  })
  afterAll(async () => {
    await other?.close()
  })

  it("moves that rule's meter: the next call over the limit is refused, and stays refused after a rule change", async () => {
    const key = 'sk-rqp-aaaaaaaa-0001'
    expect((await chat(t, key, REQUESTED)).status).toBe(200)
    expect((await chat(t, key, REQUESTED)).status).toBe(200)
    expect(await t.server.ledger.flushed()).toBe(true)
    expect((await admin(t.url, 'PUT', `/prices/openai/${DATED}`, { body: { input_mtok: 3, output_mtok: 12 } })).status).toBe(200)
    expect((await admin(t.url, 'POST', `/prices/openai/${DATED}/reprice`)).json()).toMatchObject({ repriced: 2, unpriced: 0 })
    // Two calls of 1M input at $3 + 100k output at $12: $4.20 each.
    const r = await chat(t, key, REQUESTED)
    expect(r.status).toBe(429)
    expect(r.json().error.spent_usd).toBeCloseTo(8.4, 12)
    expect((await admin(t.url, 'POST', '/budgets/rules', { body: { api_key_pattern: 'sk-unrelated-*', daily_limit_usd: 1, action: 'warn' } })).status).toBe(201)
    expect((await chat(t, key, REQUESTED)).status).toBe(429)
  }, 60_000)
})
