import { beforeAll, describe, expect, it } from 'vitest'
import { DEFAULT_RULE_OPTIONS } from '../../src/shared/api'
import { budgetsOf } from '../../src/main/budgets'
import { Meter } from '../../src/main/budgets/meter'
import type { Rule } from '../../src/main/budgets/rules'
import { moveSpendOf, spendCounter } from '../../src/main/budgets/state/pg/call-spend'
import { Limiter } from '../../src/main/budgets/state/pg/limiter'
import { SpendRows } from '../../src/main/budgets/state/pg/spend-rows'
import { ruleKey } from '../../src/main/budgets/state/pg/sql'
import { insertCalls } from '../../src/main/ledger/pg/insert'
import type { CallRecord } from '../../src/main/ledger/record'
import { hashKey } from '../../src/main/proxy/attribution'
import { keyHint } from '../../src/shared/key-hint'
import { migratePostgres } from '../../src/main/storage/postgres-migrations'
import { PeriodClock } from '../../src/main/time/zone'
import { ADMIN_CONFIG, admin } from '../admin/support'
import { eventually, postJson, type Reply } from '../support/http'
import type { PostgresStore } from '../../src/main/storage/postgres'
import { usePostgres } from '../support/pg-harness'
import type { TestServer } from '../support/server'
import { spillWithRequestedModel } from './requested-model-support'
import { NANO_COST, NANO_FIXTURE, fixtureModel, replayJson } from './support'

/**
 * PostgreSQL (`storage.url`): a rule's `model_pattern` matches the model a call requested as
 * well as the one its answer names (README: Budgets), in every place the shared state reads
 * `calls`: a spend row's seed (calendar periods and rolling windows), the counting of stored
 * calls into existing rows, re-pricing, and the meters each instance loads from every
 * instance's calls. The recorded fixture's request names `gpt-5-nano`, its answer
 * `gpt-5-nano-2025-08-07`: a rule `model_pattern: gpt-5-nano` matches it only by the request.
 */

const ANSWERED = fixtureModel(NANO_FIXTURE)

const h = usePostgres()
beforeAll(() => replayJson(h.upstream, NANO_FIXTURE))

const pgStore = (url: string) => h.store(url)

function server(url: string, rules: unknown[] = [], dir?: string): Promise<TestServer> {
  return h.server({ url, dir, config: { ...ADMIN_CONFIG, timezone: 'UTC', budgets: { rules } } })
}

const chat = (t: TestServer, key: string, headers: Record<string, string> = {}): Promise<Reply> =>
  postJson(`${t.url}/v1/chat/completions`, { model: 'gpt-5-nano', messages: [{ role: 'user', content: 'hi' }], max_completion_tokens: 300 }, {
    authorization: `Bearer ${key}`,
    ...headers,
  })

const close = (a: number, b: number) => Math.abs(a - b) <= Math.max(Math.abs(a), Math.abs(b)) * 1e-9

describe('two servers on one PostgreSQL, a block rule matching calls by the model they requested', () => {
  it('a rule naming only the answered model: a server that has not answered the name itself learns it from the other\'s stored calls, and refuses', async () => {
    const url = h.database()
    const rules = [{ api_key_pattern: 'sk-pgrq-ans-*', model_pattern: ANSWERED, daily_limit_usd: NANO_COST * 0.75, action: 'block' }]
    const a = await server(url, rules)
    const b = await server(url, rules)
    const key = 'sk-pgrq-ans-aaaaaaaa-0001'
    expect((await chat(a, key)).status).toBe(200)
    expect(await a.server.ledger.flushed()).toBe(true)
    // B has heard of A's call (its listing counts it for the key)...
    await eventually(async () => {
      const body = (await (await fetch(`${b.url}/api/dashboard/budgets`)).json()) as any
      return body.rules.some((r: any) => r.api_key_hash === hashKey(key) && r.windows.some((w: any) => w.spent_usd > 0))
    }, 15_000)
    // ...and refuses a burst of the key's calls asking for the name, every one, before it answered one.
    const burst = await Promise.all(Array.from({ length: 5 }, () => chat(b, key)))
    expect(burst.map((r) => r.status)).toEqual([429, 429, 429, 429, 429])
  })

  it('a rule naming only the answered model: a server that heard nothing of the other\'s call learns the name from its read of the meters, and refuses', async () => {
    const url = h.database()
    const rules = [{ api_key_pattern: 'sk-pgrq-ans-*', model_pattern: ANSWERED, daily_limit_usd: NANO_COST * 0.75, action: 'block' }]
    const a = await server(url, rules)
    const b = await server(url, rules)
    const feed = budgetsOf(b.server.context).feed!
    await eventually(() => feed.status().listening && feed.status().reads >= 1, 20_000)
    // B's listening connection stays open but hears nothing (a transaction-mode pooler, a dropped socket).
    await (feed as unknown as { client: { query(sql: string): Promise<unknown> } }).client.query('UNLISTEN *')
    const key = 'sk-pgrq-ans-bbbbbbbb-0001'
    expect((await chat(a, key)).status).toBe(200)
    expect(await a.server.ledger.flushed()).toBe(true)
    // B reads its meters again (as it does when its check of the connection goes unheard): only the read has A's call.
    await feed.reload()
    expect(feed.status().heard).toBe(0)
    const burst = await Promise.all(Array.from({ length: 3 }, () => chat(b, key)))
    expect(burst.map((r) => r.status)).toEqual([429, 429, 429])
  })

  it("counts another rule's calls stored by the other server in its row, and refuses as one server would", async () => {
    const url = h.database()
    // The broad block rule counts every gpt-5-nano call of the key; the narrow warn rule governs
    // the calls of tenant `side` (a longer key prefix comes first), which the broad rule counts too.
    const rules = [
      { api_key_pattern: 'sk-pgrq-*', model_pattern: 'gpt-5-nano', daily_limit_usd: NANO_COST * 1.5, action: 'block' },
      { api_key_pattern: 'sk-pgrq-k*', tenant: 'side', daily_limit_usd: 1000, action: 'warn' },
    ]
    const a = await server(url, rules)
    const b = await server(url, rules)
    const key = 'sk-pgrq-k-aaaaaaaa-0001'
    const first = await chat(b, key)
    expect(first.status).toBe(200)
    expect(first.json().model).toBe(ANSWERED)
    expect(await b.server.ledger.flushed()).toBe(true)
    // Under the warn rule on A: stored by A's ledger, which adds it to the broad rule's row.
    expect((await chat(a, key, { 'x-burnrate-tenant': 'side' })).status).toBe(200)
    expect(await a.server.ledger.flushed()).toBe(true)
    // B's own meters hold its one call (under the limit): only the shared row can refuse.
    const refused = await chat(b, key)
    expect(refused.status).toBe(429)
    expect(refused.json().error).toMatchObject({ type: 'budget_exceeded', period: 'daily', api_key_pattern: 'sk-pgrq-*' })
    expect(close(refused.json().error.spent_usd, NANO_COST * 2)).toBe(true)
    // Stored with the model the request named.
    const store = pgStore(url)
    expect(await store.all('SELECT model, requested_model, tenant FROM calls WHERE status = 200 ORDER BY id')).toEqual([
      { model: ANSWERED, requested_model: 'gpt-5-nano', tenant: '' },
      { model: ANSWERED, requested_model: 'gpt-5-nano', tenant: 'side' },
    ])
    // A rule change reloads both servers' meters from PostgreSQL's calls: still refused on both.
    expect((await admin(a.url, 'POST', '/budgets/rules', { body: { api_key_pattern: 'sk-unrelated-*', daily_limit_usd: 1, action: 'warn' } })).status).toBe(201)
    await eventually(async () => (await admin(b.url, 'GET', '/budgets/rules')).json().some((r: Rule) => r.api_key_pattern === 'sk-unrelated-*'), 20_000)
    expect((await chat(a, key)).status).toBe(429)
    expect((await chat(b, key)).status).toBe(429)
  }, 90_000)

  it('a rule created after the calls: its row starts from them, and both servers refuse (also after a restart)', async () => {
    const url = h.database()
    const a = await server(url)
    const b = await server(url)
    const key = 'sk-pgrs-aaaaaaaa-0001'
    expect((await chat(a, key)).status).toBe(200)
    expect((await chat(a, key)).status).toBe(200)
    expect(await a.server.ledger.flushed()).toBe(true)
    const rule = { api_key_pattern: 'sk-pgrs-*', model_pattern: 'gpt-5-nano', daily_limit_usd: NANO_COST * 1.5, action: 'block' }
    expect((await admin(a.url, 'POST', '/budgets/rules', { body: rule })).status).toBe(201)
    const engineB = budgetsOf(b.server.context).engine
    await eventually(() => engineB.rules.active().some((r) => r.api_key_pattern === 'sk-pgrs-*'), 20_000)
    // B never saw the key: whether its meters (read again from PostgreSQL after the rule change)
    // or the rule's spend row (created now, from the calls in PostgreSQL) decide, A's calls count.
    const r = await chat(b, key)
    expect(r.status).toBe(429)
    expect(close(r.json().error.spent_usd, NANO_COST * 2)).toBe(true)
    const again = await b.restart()
    h.onTeardown(() => again.cleanup())
    // At start-up, from the rules it last read (its data folder), before PostgreSQL answers.
    expect(budgetsOf(again.server.context).engine.rules.active().some((r) => r.api_key_pattern === 'sk-pgrs-*')).toBe(true)
    expect((await chat(again, key)).status).toBe(429)
    expect((await chat(a, key)).status).toBe(429)
  }, 90_000)
})

describe('spill files on PostgreSQL', () => {
  it("an old file's calls load with no requested model; a new file's count by theirs", async () => {
    const url = h.database()
    const dir = h.tempDir('burnrate-pgrq-spill-')
    const key = 'sk-pgrqs-aaaaaaaa-0001'
    spillWithRequestedModel(dir, key)
    const rules = [{ api_key_pattern: 'sk-pgrqs-*', model_pattern: 'gpt-5-nano', daily_limit_usd: 0.001, action: 'block' }]
    const t = await server(url, rules, dir)
    const store = pgStore(url)
    await eventually(async () => (await store.get<{ n: number }>('SELECT COUNT(*) AS n FROM calls'))!.n === 2, 20_000)
    expect(await store.all('SELECT model, requested_model FROM calls ORDER BY id')).toEqual([
      { model: ANSWERED, requested_model: null },
      { model: ANSWERED, requested_model: 'gpt-5-nano' },
    ])
    // The second call is the rule's (by the model it requested): its $0.001 is the whole limit.
    const r = await chat(t, key)
    expect(r.status).toBe(429)
    expect(close(r.json().error.spent_usd, 0.001)).toBe(true)
  }, 60_000)
})

describe('the shared spend rows, by the model a call requested (statements against PostgreSQL)', () => {
  const clock = new PeriodClock('UTC', 1)
  const zone = { timezone: 'UTC', budgets: { week_start: 'monday' as const } }
  const base = { ...DEFAULT_RULE_OPTIONS, daily_limit_usd: null, monthly_limit_usd: null, soft_limit_pct: null, action: 'block', source: 'config', created_at: null }
  const rules = [
    { api_key_pattern: '*', model_pattern: 'gpt-5-nano', daily_limit_usd: 10, weekly_limit_usd: 10, monthly_limit_usd: 10, session_limit_usd: 10 },
    { api_key_pattern: 'sk-*', model_pattern: 'gpt-5-n*', daily_limit_usd: 10 },
    { api_key_pattern: 'sk-r*', model_pattern: 'gpt-5-nano', window_hours: 5, window_limit_usd: 10 },
    { api_key_pattern: 'sk-rq*', model_pattern: 'gpt_5%x*', daily_limit_usd: 10 },
  ].map((r) => ({ ...base, ...r }) as Rule)

  function record(key: string, cost: number, over: Partial<CallRecord>, i: number): CallRecord {
    return {
      ts: Date.now(), provider: 'openai', model: 'gpt-4o-mini', endpoint: 'chat.completions', api_key_hash: hashKey(key), key_hint: keyHint(key),
      tenant: '', agent: '', session: 's1', status: 200, streamed: false, input_tokens: 10, output_tokens: 10, cache_read_tokens: 0,
      cache_write_tokens: 0, cache_write_1h_tokens: 0, reasoning_tokens: 0, cost_usd: cost, priced: true, estimated: false, latency_ms: 1, error: null,
      call_key: `${key}-${i}`, ...over,
    }
  }
  const callsOf = (key: string): CallRecord[] =>
    [
      record(key, 0.001, { model: ANSWERED, requested_model: 'gpt-5-nano' }, 0),
      // Matched by the requested model only, for every rule.
      record(key, 0.002, { model: 'gpt-4o-2024-08-06', requested_model: 'gpt-5-nano' }, 1),
      record(key, 0.004, { model: 'gpt-4o', requested_model: null }, 2),
      record(key, 0.008, { model: 'gpt-5-nano' }, 3),
      record(key, 0.016, { model: 'gpt-4o', requested_model: 'gpt_5%xl' }, 4),
      // LIKE's wildcards in a requested model are plain characters.
      record(key, 0.032, { model: 'gpt-4o', requested_model: 'gpt-5-nanox' }, 5),
    ]
  /** What the engine's scopeMatches counts: the rule's model pattern against the model or the requested model. */
  const matches = (p: string | null, v: string | null | undefined) => p === null || (typeof v === 'string' && (p.endsWith('*') ? v.startsWith(p.slice(0, -1)) : v === p))
  const want = (rule: Rule, calls: CallRecord[], extra = new Map<CallRecord, number>()) =>
    calls.filter((c) => matches(rule.model_pattern, c.model) || matches(rule.model_pattern, c.requested_model)).reduce((s, c) => s + c.cost_usd + (extra.get(c) ?? 0), 0)

  async function ensureRows(store: PostgresStore, key: string, now: number): Promise<void> {
    const rowsFor = new SpendRows(store, new Limiter(2))
    for (const rule of rules) {
      const periods = new Meter(rule, clock).periods(now, 's1')
      await rowsFor.ensure(ruleKey(rule), { rule, meter: new Meter(rule, clock), keyHash: hashKey(key), session: 's1', ts: now, periods, amount: 0 }, periods)
    }
  }

  /** Each rule's rows for `key`: the calendar and session rows' spend, a window's the sum of its minutes. */
  async function spentPerRule(store: PostgresStore, key: string): Promise<Map<string, number[]>> {
    const rows = await store.all<{ rule_key: string; period: string; spent_usd: number; in_buckets: number | null }>(
      `SELECT rule_key, period, spent_usd, (SELECT SUM(spent_usd) FROM budget_window_spend w WHERE w.spend_id = b.id) AS in_buckets
         FROM budget_spend b WHERE api_key_hash = @k ORDER BY id`,
      { k: hashKey(key) },
    )
    const out = new Map<string, number[]>()
    for (const r of rows) out.set(r.rule_key, [...(out.get(r.rule_key) ?? []), r.period === 'window' ? (r.in_buckets ?? 0) : r.spent_usd])
    return out
  }

  function expectRows(got: Map<string, number[]>, expected: (rule: Rule) => number): void {
    const periods = { [ruleKey(rules[0])]: 4, [ruleKey(rules[1])]: 1, [ruleKey(rules[2])]: 1, [ruleKey(rules[3])]: 1 }
    for (const rule of rules) {
      const spent = got.get(ruleKey(rule))
      expect(spent, ruleKey(rule)).toHaveLength(periods[ruleKey(rule)])
      for (const s of spent!) expect(Math.round(s * 1e6), ruleKey(rule)).toBe(Math.round(expected(rule) * 1e6))
    }
  }

  it('calls stored after the rows exist are added to them (calendar periods, session, window)', async () => {
    const store = pgStore(h.database())
    await migratePostgres(store)
    const key = 'sk-rq-added-0001'
    await ensureRows(store, key, Date.now())
    const calls = callsOf(key)
    await store.transaction(async (tx) => spendCounter(zone)(tx, await insertCalls(tx, calls)))
    const got = await spentPerRule(store, key)
    expectRows(got, (rule) => want(rule, calls))
    // Not vacuous: the requested model decides for some of them.
    expect(want(rules[0], calls)).toBeCloseTo(0.011, 12)
    expect(want(rules[3], calls)).toBeCloseTo(0.016, 12)
  }, 60_000)

  it('a row created after the calls starts from them (calendar periods, session, window)', async () => {
    const store = pgStore(h.database())
    await migratePostgres(store)
    const key = 'sk-rq-seeded-0001'
    const calls = callsOf(key)
    await store.transaction(async (tx) => {
      await insertCalls(tx, calls)
    })
    await ensureRows(store, key, Date.now())
    expectRows(await spentPerRule(store, key), (rule) => want(rule, calls))
  }, 60_000)

  it('re-pricing moves the rows a call counts in by its requested model', async () => {
    const store = pgStore(h.database())
    await migratePostgres(store)
    const key = 'sk-rq-moved-0001'
    await ensureRows(store, key, Date.now())
    const calls = callsOf(key)
    await store.transaction(async (tx) => spendCounter(zone)(tx, await insertCalls(tx, calls)))
    const moved = calls[1]
    await store.transaction((tx) =>
      moveSpendOf(tx, [{
        api_key_hash: moved.api_key_hash, ts: moved.ts, provider: moved.provider, model: moved.model, requested_model: moved.requested_model,
        agent: moved.agent, tenant: moved.tenant, session: moved.session, delta: 0.5,
      }], clock),
    )
    expectRows(await spentPerRule(store, key), (rule) => want(rule, calls, new Map([[moved, 0.5]])))
  }, 60_000)
})
