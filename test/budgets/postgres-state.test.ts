import { describe, expect, it } from 'vitest'
import { DEFAULT_RULE_OPTIONS } from '../../src/shared/api'
import { BudgetEngine } from '../../src/main/budgets/engine'
import { sharedBudgetGate } from '../../src/main/budgets/gate'
import type { Rule } from '../../src/main/budgets/rules'
import { PgRuleStore } from '../../src/main/budgets/shared-rules'
import { spendCounter } from '../../src/main/budgets/state/pg/call-spend'
import { PgBudgetState } from '../../src/main/budgets/state/postgres'
import { PgLedger } from '../../src/main/ledger/pg/pg-ledger'
import { openai } from '../../src/main/providers/openai'
import { hashKey } from '../../src/main/proxy/attribution'
import { keyHint } from '../../src/shared/key-hint'
import { type CallContext, type CallGate, decided } from '../../src/main/proxy/gate'
import { PostgresStore } from '../../src/main/storage/postgres'
import { migratePostgres } from '../../src/main/storage/postgres-migrations'
import { eventually } from '../support/http'
import { usePostgres } from '../support/pg-harness'

/**
 * Budget admission exact across instances: "instances" here are budget engines and gates, each
 * with its own PostgreSQL pool and PgBudgetState, over one real PostgreSQL database.
 */

/** Every call costs exactly what it is expected to cost (the reservation is the real cost). */
const COST = 0.01
/** Cuts part-way through a burst of 200: room for 50 calls and half of another. */
const LIMIT = 0.505

const h = usePostgres({ upstream: false })

function rule(p: Partial<Rule>): Rule {
  return {
    ...DEFAULT_RULE_OPTIONS,
    api_key_pattern: 'sk-team-*', daily_limit_usd: LIMIT, monthly_limit_usd: null, action: 'block', soft_limit_pct: null,
    source: 'config', created_at: null, ...p,
  }
}

function ctx(key: string, session = ''): CallContext {
  return {
    provider: openai,
    shape: { endpoint: 'chat.completions', model: 'gpt-4o-mini', stream: false, billable: true },
    apiKey: key, apiKeyHash: hashKey(key), keyHint: keyHint(key), tenant: '', agent: '', session,
    ts: Date.now(), body: {}, bodyBytes: 10,
  }
}

interface Instance {
  store: PostgresStore
  rules: PgRuleStore
  state: PgBudgetState
  engine: BudgetEngine
  gate: CallGate
  /** One call: admitted, held `holdMs` (upstream time), then settled at `cost`; false when refused. */
  call(key: string, cost?: number, holdMs?: number): Promise<boolean>
  close(): Promise<void>
}

async function instance(url: string, rules: Rule[], leaseMs?: number): Promise<Instance> {
  const store = new PostgresStore(url)
  await migratePostgres(store)
  // 200 admissions at once queue here on a busy machine: none is to be decided in process for the wait.
  const state = new PgBudgetState(store, { leaseMs, admissionWaitMs: 30_000 })
  // As budgetsOf wires it in PG mode: config rules from the file, runtime rules shared in the database.
  let engine: BudgetEngine | null = null
  const shared = new PgRuleStore(store, (r) => engine?.setRuntimeRules(r))
  engine = new BudgetEngine('UTC', 1, rules, [], { worstCase: () => COST, expected: () => COST, learn: () => {} }, () => [], state)
  await shared.refresh()
  shared.start()
  const gate = sharedBudgetGate(engine)
  const i: Instance = {
    store,
    rules: shared,
    state,
    engine,
    gate,
    async call(key, cost = COST, holdMs = 0) {
      const a = await decided(gate.admit(ctx(key)))
      if (a.refuse) {
        expect(a.refuse.status).toBe(429)
        expect(a.refuse.reason).toBe('budget_exceeded')
        return false
      }
      await new Promise((r) => setTimeout(r, holdMs))
      a.settle?.(cost)
      return true
    },
    async close() {
      shared.close()
      await state.close()
      await store.close()
    },
  }
  h.onTeardown(() => i.close())
  return i
}

async function spendRows(store: PostgresStore, key: string) {
  return store.all<{ period: string; spent_usd: number; reserved_usd: number }>(
    'SELECT period, spent_usd, reserved_usd FROM budget_spend WHERE api_key_hash = @k ORDER BY period',
    { k: hashKey(key) },
  )
}

/** 200 calls at once, alternating between the instances; each admitted one is in flight for up to 30 ms. */
async function burst(instances: Instance[], key: string): Promise<number> {
  const results = await Promise.all(
    Array.from({ length: 200 }, (_, i) => instances[i % instances.length].call(key, COST, (i * 7) % 30)),
  )
  for (const x of instances) expect(await x.state.settled()).toBe(true)
  return results.filter(Boolean).length
}

describe('budget admission shared by two instances on one PostgreSQL', () => {
  it('200 concurrent calls against one block rule: the two together admit exactly what one alone admits, and the spend is the sum of the calls', async () => {
    const url = h.database()
    const rules = [rule({ monthly_limit_usd: 100 })]
    const [a, b] = [await instance(url, rules), await instance(url, rules)]

    const two = await burst([a, b], 'sk-team-two-instances-0001')
    const one = await burst([a], 'sk-team-one-instance-00002')
    // `reserve: expected` admits while settled spend plus what is in flight is under the limit:
    // 50 calls leave $0.005, so the 51st is admitted and nothing after it. The bound (README):
    // at most one call's reservation over the limit, plus what calls cost beyond their reservation
    // (here nothing). Two instances get no more than one.
    expect(one).toBe(51)
    expect(two).toBe(one)
    expect(two * COST).toBeLessThanOrEqual(LIMIT + COST + 1e-12)

    for (const rows of [await spendRows(a.store, 'sk-team-two-instances-0001'), await spendRows(b.store, 'sk-team-one-instance-00002')]) {
      // daily and monthly rows each hold the settled spend of every admitted call, nothing reserved.
      expect(rows.map((r) => r.period)).toEqual(['daily', 'monthly'])
      for (const r of rows) {
        expect(Math.abs(r.spent_usd - 51 * COST)).toBeLessThan(51 * COST * 1e-9)
        expect(r.reserved_usd).toBeLessThan(1e-12)
      }
    }
    const left = await a.store.get<{ n: number }>('SELECT COUNT(*) AS n FROM budget_reservations')
    expect(left?.n).toBe(0)
  }, 120_000)

  it('reserve: max_tokens never overshoots across instances, and varied costs settle to their exact sum', async () => {
    const url = h.database()
    const rules = [rule({ reserve: 'max_tokens' })]
    const [a, b] = [await instance(url, rules), await instance(url, rules)]
    const key = 'sk-team-worst-case-aaaa-0003'
    // Each call costs at most its worst case (COST), somewhere from half of it to all of it.
    const costs: number[] = []
    const results = await Promise.all(
      Array.from({ length: 200 }, async (_, i) => {
        const cost = COST * (0.5 + ((i * 37) % 50) / 100)
        const ok = await [a, b][i % 2].call(key, cost, (i * 11) % 25)
        if (ok) costs.push(cost)
        return ok
      }),
    )
    await a.state.settled()
    await b.state.settled()
    const admitted = results.filter(Boolean).length
    expect(admitted).toBeGreaterThanOrEqual(50)
    expect(admitted).toBeLessThan(200)
    const sum = costs.reduce((s, c) => s + c, 0)
    const [daily] = await spendRows(a.store, key)
    expect(Math.abs(daily.spent_usd - sum)).toBeLessThan(sum * 1e-9)
    expect(daily.spent_usd).toBeLessThanOrEqual(LIMIT)
    expect(daily.reserved_usd).toBeLessThan(1e-12)
  }, 120_000)

  it("a killed instance's reservations expire after its lease; the other instance then admits again", async () => {
    const url = h.database()
    const rules = [rule({ daily_limit_usd: 0.095 })]
    // A short lease, renewed every second: the reservations of a living instance outlive a stall
    // of up to 2 s (a busy machine) between two renewals, and still run out soon after A dies.
    const LEASE_MS = 3000
    const a = await instance(url, rules, LEASE_MS)
    const b = await instance(url, rules, LEASE_MS)
    const key = 'sk-team-killed-instance-0004'
    // A admits calls until what it has in flight reaches the limit, and dies before any ends.
    let held = 0
    while (!(await decided(a.gate.admit(ctx(key)))).refuse) held++
    expect(held).toBe(10)
    await a.state.close() // no more lease renewals: the process is gone
    await a.store.close()
    expect((await decided(b.gate.admit(ctx(key)))).refuse?.body).toMatchObject({ error: { type: 'budget_exceeded', period: 'daily' } })
    // Within about one lease (3 s here, 30 s by default) B's sweep frees every one of them.
    await eventually(async () => (await b.store.get<{ n: number }>('SELECT COUNT(*) AS n FROM budget_reservations'))?.n === 0, 30_000)
    expect((await spendRows(b.store, key))[0].reserved_usd).toBeLessThan(1e-12)
    expect(await b.call(key)).toBe(true)
    await b.state.settled()
    const rows = await spendRows(b.store, key)
    expect(rows[0].spent_usd).toBeCloseTo(COST, 12)
    expect(rows[0].reserved_usd).toBeLessThan(1e-12)
  }, 60_000)

  it('a new spend row starts from the calls every instance already recorded in the calls table', async () => {
    const url = h.database()
    const a = await instance(url, [rule({ daily_limit_usd: 1 })])
    const key = 'sk-team-seeded-from-calls-05'
    const insert = (cost: number, ts: number, provider = 'openai') =>
      a.store.run(
        `INSERT INTO calls (ts, provider, model, endpoint, api_key_hash, key_hint, tenant, agent, session, status, streamed,
           input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cache_write_1h_tokens, reasoning_tokens,
           cost_usd, priced, estimated, latency_ms)
         VALUES (@ts, @provider, 'gpt-4o-mini', 'chat.completions', @k, 'sk-t...05', '', '', '', 200, 0, 1, 1, 0, 0, 0, 0, @cost, 1, 0, 5)`,
        { ts, provider, k: hashKey(key), cost },
      )
    await insert(0.7, Date.now() - 1000)
    await insert(0.25, Date.now() - 2000)
    await insert(5, Date.now() - 3 * 86_400_000) // another day: not today's spend
    // $0.95 of $1 spent by other instances: this call (expected $0.01) is let in, and its
    // warning names the shared figure; then $0.96 + in flight reaches no limit yet...
    expect(await a.call(key)).toBe(true)
    await a.state.settled()
    const [daily] = await spendRows(a.store, key)
    expect(daily.spent_usd).toBeCloseTo(0.96, 12)
    // ...and another instance's $0.05 call recorded in `calls` after the row exists is counted
    // through its own settlement, as every instance settles into the same row.
    const b = await instance(url, [rule({ daily_limit_usd: 1 })])
    expect(await b.call(key, 0.05)).toBe(true)
    await b.state.settled()
    const refused = await decided(a.gate.admit(ctx(key)))
    expect(refused.refuse?.body).toMatchObject({ error: { type: 'budget_exceeded', period: 'daily', limit_usd: 1 } })
    expect((refused.refuse?.body as { error: { spent_usd: number } }).error.spent_usd).toBeCloseTo(1.01, 12)
  }, 60_000)
})

describe('runtime budget rules shared by the instances on one PostgreSQL', () => {
  it('a rule written before anything else touched a new database creates the schema first', async () => {
    const store = h.store(h.database())
    const seen: Rule[][] = []
    const rules = new PgRuleStore(store, (r) => seen.push(r))
    const { created } = await rules.put({ ...DEFAULT_RULE_OPTIONS, api_key_pattern: 'sk-first-*', daily_limit_usd: 1, monthly_limit_usd: null, action: 'block', soft_limit_pct: null })
    expect(created).toBe(true)
    expect((await rules.all()).map((r) => r.api_key_pattern)).toEqual(['sk-first-*'])
  })

  it('a rule created through one instance refuses calls on the other within a poll; changed and deleted, it follows', async () => {
    const url = h.database()
    const a = await instance(url, [])
    const b = await instance(url, [])
    const key = 'sk-shared-rule-aaaaaaaa-0006'
    expect(await b.call(key)).toBe(true)
    await b.state.settled()

    const { created } = await a.rules.put({ ...DEFAULT_RULE_OPTIONS, api_key_pattern: 'sk-shared-*', daily_limit_usd: 0, monthly_limit_usd: null, action: 'block', soft_limit_pct: null })
    expect(created).toBe(true)
    // The writer enforces it at once; the other instance once its poll (every second) sees it.
    expect((await decided(a.gate.admit(ctx(key)))).refuse?.reason).toBe('budget_exceeded')
    const refused = await eventually(async () => (await decided(b.gate.admit(ctx(key)))).refuse, 10_000)
    expect(refused?.body).toMatchObject({ error: { type: 'budget_exceeded', api_key_pattern: 'sk-shared-*', period: 'daily', limit_usd: 0 } })
    expect(b.engine.rules.list().map((x) => x.rule.api_key_pattern)).toEqual(['sk-shared-*'])

    // Raised on B: A admits again. Deleted on A: B has no rule left.
    await b.rules.put({ ...DEFAULT_RULE_OPTIONS, api_key_pattern: 'sk-shared-*', daily_limit_usd: 5, monthly_limit_usd: null, action: 'block', soft_limit_pct: null })
    await eventually(async () => !(await decided(a.gate.admit(ctx(key)))).refuse, 10_000)
    expect(await a.rules.delete('sk-shared-*')).toBe(true)
    await eventually(() => b.engine.rules.list().length === 0, 10_000)
    expect(await a.rules.delete('sk-shared-*')).toBe(false)
  }, 60_000)
})

describe('PostgreSQL away', () => {
  it('calls are decided on the instance’s own meter (not stranded), and their cost joins the shared spend, once, when it returns', async () => {
    const url = h.database()
    const a = await instance(url, [rule({ daily_limit_usd: 1 })], 600)
    const key = 'sk-team-database-away-aaaa-07'
    // The instance's ledger, as a server wires it: every stored call counts in the spend rows.
    const dir = h.tempDir('burnrate-pg-away-')
    const ledger = new PgLedger(a.store, { flushIntervalMs: 20, maxPending: 10_000, timezone: 'UTC', dataDir: dir })
    ledger.onBatchTx(spendCounter({ timezone: 'UTC', budgets: { week_start: 'monday' } }))
    ledger.start()
    // As the proxy ends a call: its admission settled, then its row recorded with what the settlement names.
    const proxied = async (cost: number): Promise<void> => {
      const adm = await decided(a.gate.admit(ctx(key)))
      expect(adm.refuse).toBeUndefined()
      const settled = adm.settle!(cost)
      ledger.record({
        ts: Date.now(), provider: 'openai', model: 'gpt-4o-mini', endpoint: 'chat.completions', api_key_hash: hashKey(key), key_hint: keyHint(key),
        tenant: '', agent: '', session: '', status: 200, streamed: false, input_tokens: 1, output_tokens: 1, cache_read_tokens: 0,
        cache_write_tokens: 0, cache_write_1h_tokens: 0, reasoning_tokens: 0, cost_usd: cost, priced: true, estimated: false, latency_ms: 1,
        error: null, ...(typeof settled === 'string' ? { budget_settled: settled } : {}),
      })
    }
    try {
      await proxied(COST)
      expect(await ledger.flushed()).toBe(true)
      expect(await a.state.settled()).toBe(true)
      h.pg.stopServer()
      try {
        // Admitted without PostgreSQL, and settled in process.
        await proxied(0.2)
        expect(a.state.failures).toBeGreaterThan(0)
      } finally {
        h.pg.startServer()
      }
      // Once it answers (the pool reconnects), the ledger stores the call and its cost joins the row.
      await eventually(async () => {
        const [daily] = await spendRows(a.store, key)
        return Math.abs(daily.spent_usd - (COST + 0.2)) < 1e-12
      }, 30_000)
      expect(await ledger.flushed()).toBe(true)
      expect(await a.state.settled()).toBe(true)
      const [daily] = await spendRows(a.store, key)
      expect(Math.abs(daily.spent_usd - (COST + 0.2))).toBeLessThan(1e-12)
    } finally {
      await ledger.close()
    }
  }, 90_000)
})
