import { calcPrice } from '@pydantic/genai-prices'
import { cpSync, mkdtempSync, readFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { beforeAll, describe, expect, it } from 'vitest'
import { DEFAULT_RULE_OPTIONS } from '../../src/shared/api'
import { BudgetEngine } from '../../src/main/budgets/engine'
import { sharedBudgetGate } from '../../src/main/budgets/gate'
import { Meter } from '../../src/main/budgets/meter'
import type { Rule } from '../../src/main/budgets/rules'
import { spendCounter, spendMover } from '../../src/main/budgets/state/pg/call-spend'
import { Limiter } from '../../src/main/budgets/state/pg/limiter'
import { SpendRows } from '../../src/main/budgets/state/pg/spend-rows'
import { ruleKey } from '../../src/main/budgets/state/pg/sql'
import { PgBudgetState } from '../../src/main/budgets/state/postgres'
import { runCli } from '../../src/main/cli/program'
import { importLogs } from '../../src/main/import/importer'
import { openDatabase } from '../../src/main/ledger/db'
import { insertCalls } from '../../src/main/ledger/pg/insert'
import { PgLedger } from '../../src/main/ledger/pg/pg-ledger'
import type { CallRecord } from '../../src/main/ledger/record'
import { Pricer } from '../../src/main/pricing/price'
import { openai } from '../../src/main/providers/openai'
import { hashKey } from '../../src/main/proxy/attribution'
import { keyHint } from '../../src/shared/key-hint'
import { type CallContext, decided } from '../../src/main/proxy/gate'
import { spillFiles } from '../../src/main/reliability/spill'
import type { PostgresStore } from '../../src/main/storage/postgres'
import { migratePostgres } from '../../src/main/storage/postgres-migrations'
import { PeriodClock } from '../../src/main/time/zone'
import { ADMIN_CONFIG, admin } from '../admin/support'
import { fixture } from '../support/fixtures'
import { eventually, postJson, type Reply } from '../support/http'
import { usePostgres } from '../support/pg-harness'
import type { TestServer } from '../support/server'
import { CLAUDE_FIXTURE, NANO_COST, NANO_FIXTURE, fixtureModel } from './support'

/**
 * PostgreSQL spend rows count every call their rule matches (README: Budgets → "Each rule's
 * spend is that of all the calls it matches, whichever rule they were under"), however the call
 * reached `calls`: another rule's admission on another instance, a `warn` rule, a rule with no
 * money limit, imported logs; once each, after a spill and restart too, and when a row is
 * created while a batch storing calls is still open. Calls a team server ingests count in none.
 */

/** claude-sonnet-4-5: 12 input, 29 output (fixtures README). */
const CLAUDE_COST = calcPrice({ input_tokens: 12, output_tokens: 29 }, fixtureModel(CLAUDE_FIXTURE), { providerId: 'anthropic' })!.total_price
/** Room for the first OpenAI call and two and a half Claude calls. */
const BROAD_LIMIT = NANO_COST + 2.5 * CLAUDE_COST
const UTC = { timezone: 'UTC', budgets: { week_start: 'monday' as const } }

const nano = fixture(NANO_FIXTURE)
const claude = fixture(CLAUDE_FIXTURE)
// Each provider's own recorded answer: a call's recorded model is its own provider's.
const h = usePostgres({
  upstream: (req) => ({ status: 200, headers: { 'content-type': 'application/json' }, body: req.url.includes('/messages') ? claude : nano }),
})

const pgStore = (url: string): PostgresStore => h.store(url)
/** A server with `config` as given (SQLite unless it names storage.url). */
const server = (config: Record<string, unknown>): Promise<TestServer> => h.server({ url: null, config: { timezone: 'UTC', ...config } })

const openaiCall = (t: TestServer, key: string): Promise<Reply> =>
  postJson(`${t.url}/v1/chat/completions`, { model: 'gpt-5-nano', messages: [{ role: 'user', content: 'hi' }], max_completion_tokens: 300 }, {
    authorization: `Bearer ${key}`,
  })
const claudeCall = (t: TestServer, key: string): Promise<Reply> =>
  postJson(`${t.url}/v1/messages`, { model: 'claude-sonnet-4-5', max_tokens: 50, messages: [{ role: 'user', content: 'hi' }] }, {
    'x-api-key': key,
    'anthropic-version': '2023-06-01',
  })

interface SpendRow {
  id: number
  rule_key: string
  period: string
  spent_usd: number
  reserved_usd: number
}

async function rowsOf(store: PostgresStore, key: string): Promise<SpendRow[]> {
  return store.all<SpendRow>('SELECT id, rule_key, period, spent_usd, reserved_usd FROM budget_spend WHERE api_key_hash = @k ORDER BY id', {
    k: hashKey(key),
  })
}

/** The summed cost of `key`'s calls in `calls` (what a row must hold), optionally of one provider. */
async function callsCost(store: PostgresStore, keyHash: string, provider?: string): Promise<number> {
  const r = await store.get<{ c: number | null }>(
    `SELECT SUM(cost_usd) AS c FROM calls WHERE api_key_hash = @k AND billing <> 'subscription'${provider ? ' AND provider = @p' : ''}`,
    { k: keyHash, p: provider ?? '' },
  )
  return r?.c ?? 0
}

const close = (a: number, b: number) => Math.abs(a - b) <= Math.max(Math.abs(a), Math.abs(b)) * 1e-9

/**
 * The same calls through the proxy: OpenAI calls governed by the broad `block` rule, Claude calls
 * by a narrower rule (`narrow`) that the broad rule also matches. PostgreSQL: two servers on one
 * database, the Claude calls through A and the OpenAI calls through B (whose own meters never
 * see A's calls: only the shared row can refuse). SQLite: one server. Returns the statuses and
 * the last answer.
 */
async function scenario(prefix: string, narrow: Record<string, unknown>, url: string | null): Promise<{ statuses: number[]; last: Reply; key: string }> {
  const rules = [{ api_key_pattern: `${prefix}-*`, daily_limit_usd: BROAD_LIMIT, action: 'block' }, { api_key_pattern: `${prefix}-n*`, provider: 'anthropic', ...narrow }]
  const config = url ? { storage: { url }, budgets: { rules } } : { budgets: { rules } }
  const a = await server(config)
  const b = url ? await server(config) : a
  const key = `${prefix}-n-aaaaaaaa-0001`
  const statuses: number[] = []
  let last: Reply | null = null
  const step = async (t: TestServer, call: (t: TestServer, key: string) => Promise<Reply>) => {
    last = await call(t, key)
    statuses.push(last.status)
    // Stored before the next call (what the next decision on the other server may read).
    expect(await t.server.ledger.flushed()).toBe(true)
  }
  await step(b, openaiCall) // creates the broad rule's daily row
  await step(a, claudeCall)
  await step(a, claudeCall)
  await step(b, openaiCall) // NANO + 2 CLAUDE: under the limit
  await step(a, claudeCall)
  await step(b, openaiCall) // NANO*2 + 3 CLAUDE: over it
  return { statuses, last: last!, key }
}

describe('a spend row counts the calls of every rule it matches (two servers on one PostgreSQL against one on SQLite)', () => {
  const cases: [string, string, Record<string, unknown>][] = [
    ['another block rule', 'sk-pgsb', { daily_limit_usd: 1000, action: 'block' }],
    ['a warn rule', 'sk-pgsw', { daily_limit_usd: 1000, action: 'warn' }],
    ['a block rule with no money limit', 'sk-pgsr', { requests_per_minute: 1000, action: 'block' }],
  ]
  for (const [what, prefix, narrow] of cases) {
    it(`calls under ${what} count in the broad block rule's row, which refuses exactly as SQLite does`, async () => {
      const lite = await scenario(`${prefix}l`, narrow, null)
      const url = h.database()
      const shared = await scenario(`${prefix}p`, narrow, url)
      expect(lite.statuses).toEqual([200, 200, 200, 200, 200, 429])
      expect(shared.statuses).toEqual(lite.statuses)
      const [sl, sp] = [lite.last.json().error, shared.last.json().error]
      expect(sp).toMatchObject({ type: 'budget_exceeded', period: 'daily', limit_usd: BROAD_LIMIT, api_key_pattern: `${prefix}p-*` })
      expect(sl).toMatchObject({ type: 'budget_exceeded', period: 'daily', limit_usd: BROAD_LIMIT, api_key_pattern: `${prefix}l-*` })
      expect(close(sp.spent_usd, sl.spent_usd)).toBe(true)

      // Once every settlement is written: the broad row is the sum of every call of the key, the
      // narrow block rule's row that of its own calls (settled once, not counted again on storing).
      const store = pgStore(url)
      const hash = hashKey(shared.key)
      const all = await callsCost(store, hash)
      const claude = await callsCost(store, hash, 'anthropic')
      expect(all).toBeGreaterThan(BROAD_LIMIT)
      const broadKey = ruleKey({ api_key_pattern: `${prefix}p-*`, provider: null, model_pattern: null, agent: null, tenant: null } as Rule)
      await eventually(async () => {
        const rows = await rowsOf(store, shared.key)
        const broad = rows.find((r) => r.rule_key === broadKey)
        return broad && close(broad.spent_usd, all) && broad.reserved_usd < 1e-12
      }, 20_000)
      const narrowRows = (await rowsOf(store, shared.key)).filter((r) => r.rule_key !== broadKey)
      if (narrow.daily_limit_usd !== undefined && narrow.action === 'block') {
        expect(narrowRows).toHaveLength(1)
        await eventually(async () => close((await rowsOf(store, shared.key)).find((r) => r.rule_key !== broadKey)!.spent_usd, claude), 20_000)
      } else {
        // A warn rule, or one with no money limit, has no shared row of its own.
        expect(narrowRows).toHaveLength(0)
      }
    }, 120_000)
  }
})

/** A database with the row a `*` rule keeps for calls made without a key, for the month of the sample Codex logs. */
async function databaseWithRow(): Promise<{ url: string; store: PostgresStore; row: () => Promise<number> }> {
  const url = h.database()
  const store = pgStore(url)
  await migratePostgres(store)
  const clock = new PeriodClock('UTC')
  const ts = Date.parse('2026-11-20T11:00:01.100Z')
  const rule = { ...DEFAULT_RULE_OPTIONS, api_key_pattern: '*', monthly_limit_usd: 100, action: 'block', source: 'config', created_at: null } as Rule
  const month = clock.monthOf(ts)
  const periods = [{ period: 'monthly' as const, limit: 100, spent: 0, start: month.start, resetsAt: month.end }]
  await new SpendRows(store, new Limiter(2)).ensure(ruleKey(rule), { rule, meter: new Meter(rule, clock), keyHash: '', session: '', ts, periods, amount: 0 }, periods)
  const row = async () => (await store.get<{ spent_usd: number }>("SELECT spent_usd FROM budget_spend WHERE api_key_hash = ''"))!.spent_usd
  return { url, store, row }
}

describe('calls that reach `calls` without an admission', () => {
  it('POST /api/ingest: a team server counts ingested calls in no budget, in the seed or after it (README: Team)', async () => {
    const url = h.database()
    const token = 'team-token-pg-spend-alice-5e1f'
    // $0.30 a day: the ingested calls below ($0.503) would be over it if they counted.
    const t = await server({ ...ADMIN_CONFIG, storage: { url }, team: { members: [{ name: 'alice', token }] }, budgets: { rules: [{ api_key_pattern: 'sk-ingest-*', daily_limit_usd: 0.3, action: 'block' }] } })
    const key = 'sk-ingest-aaaaaaaa-0001'
    const store = pgStore(url)

    // Calls this key made on a member's Burnrate (today, UTC), one on a subscription (no money).
    const now = Date.now()
    const at = new Date(Math.max(new PeriodClock('UTC').dayOf(now).start, now - 60_000)).toISOString()
    const call = (id: number, over: Record<string, unknown> = {}) => ({
      id, t: at, provider: 'openai', model: 'gpt-5-nano', api_key_hash: hashKey(key), key_hint: keyHint(key), tenant: '', agent: 'codex',
      session: 's-1', status: 200, streamed: false, input_tokens: 100, output_tokens: 50, cache_read_tokens: 0, cache_write_tokens: 0,
      reasoning_tokens: 0, cost_usd: 0.25 + id / 1000, priced: true, estimated: false, latency_ms: 10, response_id: `r_${id}`, source: 'proxy',
      billing: 'api', project: '', member: '', ...over,
    })
    const ingest = async (batch: unknown[]) => (await postJson(`${t.url}/api/ingest`, { calls: batch }, { authorization: `Bearer ${token}` })).json()

    // Before the key's row exists: the row's seed leaves them out.
    expect(await ingest([call(1), call(2), call(3, { billing: 'subscription' })])).toMatchObject({ accepted: 3, duplicates: 0 })
    expect((await openaiCall(t, key)).status).toBe(200)
    expect(await t.server.ledger.flushed()).toBe(true)
    await eventually(async () => (await rowsOf(store, key)).length === 1 && close((await rowsOf(store, key))[0].spent_usd, NANO_COST), 20_000)
    // Stored all the same: in every dashboard total.
    expect(close(await callsCost(store, hashKey(key)), NANO_COST + 0.251 + 0.252)).toBe(true)

    // After it: storing them adds nothing to it; a replayed batch neither.
    expect(await ingest([call(4), call(5)])).toMatchObject({ accepted: 2, duplicates: 0 })
    expect(await ingest([call(4), call(5)])).toMatchObject({ accepted: 0, duplicates: 2 })
    expect(close((await rowsOf(store, key))[0].spent_usd, NANO_COST)).toBe(true)
    // The meters the instance reads from the database (a rule change reloads them) leave them out too.
    expect((await admin(t.url, 'POST', '/budgets/rules', { body: { api_key_pattern: 'sk-other-*', daily_limit_usd: 1, action: 'warn' } })).status).toBe(201)
    // So the key's own calls are decided on its own spend: admitted.
    expect((await openaiCall(t, key)).status).toBe(200)
  }, 60_000)

  it('imported agent logs add their calls to the existing row once; importing them again adds nothing', async () => {
    const { store, row } = await databaseWithRow()
    const dir = h.tempDir('burnrate-pg-spend-import-')
    const paths = [resolve(__dirname, '../fixtures/agent-logs/codex/sessions')]
    expect(await row()).toBe(0)

    const pricer = new Pricer()
    const countSpend = spendCounter(UTC)
    const moveSpend = spendMover(UTC)
    const one = openDatabase(join(dir, 'one.db'))
    expect(await importLogs(one, { agent: 'codex', paths, pricer, store, countSpend, moveSpend })).toMatchObject({ imported: 2 })
    one.close()
    const cost = await callsCost(store, '')
    expect(cost).toBeGreaterThan(0)
    expect(close(await row(), cost)).toBe(true)
    // This machine lost its import keys: the calls are found by their call keys, and not counted again.
    const two = openDatabase(join(dir, 'two.db'))
    expect(await importLogs(two, { agent: 'codex', paths, pricer, store, countSpend, moveSpend })).toMatchObject({ imported: 0, duplicates: 2 })
    two.close()
    expect(close(await row(), cost)).toBe(true)
  }, 60_000)
})

/** Every call costs what it is expected to cost. */
const COST = 0.01

function engineOn(store: PostgresStore, rules: Rule[]): { engine: BudgetEngine; state: PgBudgetState } {
  const state = new PgBudgetState(store)
  const engine = new BudgetEngine('UTC', 1, rules, [], { worstCase: () => COST, expected: () => COST, learn: () => {} }, () => [], state)
  return { engine, state }
}

function ctx(key: string): CallContext {
  return {
    provider: openai,
    shape: { endpoint: 'chat.completions', model: 'gpt-4o-mini', stream: false, billable: true },
    apiKey: key, apiKeyHash: hashKey(key), keyHint: keyHint(key), tenant: '', agent: '', session: '', ts: Date.now(), body: {}, bodyBytes: 10,
  }
}

function record(key: string, cost: number, over: Partial<CallRecord> = {}): CallRecord {
  return {
    ts: Date.now(), provider: 'openai', model: 'gpt-4o-mini', endpoint: 'chat.completions', api_key_hash: hashKey(key), key_hint: keyHint(key),
    tenant: '', agent: '', session: '', status: 200, streamed: false, input_tokens: 10, output_tokens: 10, cache_read_tokens: 0,
    cache_write_tokens: 0, cache_write_1h_tokens: 0, reasoning_tokens: 0, cost_usd: cost, priced: true, estimated: false, latency_ms: 1, error: null,
    ...over,
  }
}

function blockRule(pattern: string): Rule {
  return { ...DEFAULT_RULE_OPTIONS, api_key_pattern: pattern, daily_limit_usd: 10, monthly_limit_usd: null, action: 'block', soft_limit_pct: null, source: 'config', created_at: null } as Rule
}

describe('imported logs through every way in: the CLI import, the sync before `burnrate status`, a server watching the logs', () => {

  const saved = { ...process.env }
  let home: string
  beforeAll(() => {
    home = h.tempDir('burnrate-pg-spend-home-')
    cpSync(resolve(__dirname, '../fixtures/agent-logs/codex'), join(home, '.codex'), { recursive: true })
  })
  /** Runs the CLI with the ledger in `url`, this home and a fresh data folder (output discarded). */
  async function cli(url: string, ...args: string[]): Promise<number> {
    const stdout = process.stdout.write
    const stderr = process.stderr.write
    process.stdout.write = (() => true) as typeof process.stdout.write
    process.stderr.write = (() => true) as typeof process.stderr.write
    Object.assign(process.env, { HOME: home, BURNRATE_DATABASE_URL: url, BURNRATE_DATA_DIR: mkdtempSync(join(home, 'data-')) })
    for (const v of ['CLAUDE_CONFIG_DIR', 'CODEX_HOME', 'GEMINI_CLI_HOME', 'XDG_DATA_HOME', 'BURNRATE_CONFIG', 'BURNRATE_URL']) delete process.env[v]
    try {
      return await runCli(args)
    } finally {
      process.stdout.write = stdout
      process.stderr.write = stderr
      for (const k of Object.keys(process.env)) if (!(k in saved)) delete process.env[k]
      Object.assign(process.env, saved)
    }
  }

  it('burnrate import', async () => {
    const { url, store, row } = await databaseWithRow()
    expect(await cli(url, 'import', 'codex', '--path', join(home, '.codex/sessions'), '--local', '--json')).toBe(0)
    const cost = await callsCost(store, '')
    expect(cost).toBeGreaterThan(0)
    expect(close(await row(), cost)).toBe(true)
  }, 60_000)

  it('burnrate status (reads the standard log folders first)', async () => {
    const { url, store, row } = await databaseWithRow()
    expect(await cli(url, 'status', '--local', '--json')).toBe(0)
    const cost = await callsCost(store, '')
    expect(cost).toBeGreaterThan(0)
    expect(close(await row(), cost)).toBe(true)
  }, 60_000)

  it('a server with import.watch', async () => {
    const { url, store, row } = await databaseWithRow()
    // The server watches the logs of the agents' home it is given.
    await h.server({ url: null, config: { timezone: 'UTC', storage: { url }, import: { watch: true } }, create: { agentHome: { home, env: {}, platform: 'linux' } } })
    await eventually(async () => (await store.get<{ n: number }>("SELECT COUNT(*) AS n FROM calls WHERE source = 'import'"))!.n === 2, 30_000)
    expect(close(await row(), await callsCost(store, ''))).toBe(true)
  }, 60_000)
})

describe('which rows a stored call counts in', () => {
  it('every row whose scope (exact or prefix patterns) and period (in the configured zone and week start) the call matches, as the engine reads them', async () => {
    const store = pgStore(h.database())
    await migratePostgres(store)
    const zone = { timezone: 'America/New_York', budgets: { week_start: 'sunday' as const } }
    const clock = new PeriodClock(zone.timezone, 0)
    const key = 'sk-scope-aaaaaaaa-0001'
    const base = { ...DEFAULT_RULE_OPTIONS, daily_limit_usd: 10, weekly_limit_usd: 10, monthly_limit_usd: 10, session_limit_usd: 10, action: 'block', source: 'config', created_at: null }
    const rules = [
      { api_key_pattern: '*' },
      { api_key_pattern: 'sk-*', provider: 'openai' },
      { api_key_pattern: 'sk-s*', model_pattern: 'gpt-5*' },
      { api_key_pattern: 'sk-sc*', model_pattern: 'gpt_5%x*' },
      { api_key_pattern: 'sk-sco*', model_pattern: 'gpt-5-nano' },
      { api_key_pattern: 'sk-scop*', agent: 'codex', tenant: 'acme*' },
    ].map((r) => ({ ...base, ...r }) as Rule)
    const now = Date.now()
    const rowsFor = new SpendRows(store, new Limiter(2))
    const m = new Meter(rules[0], clock)
    for (const rule of rules) {
      for (const session of ['s1', 's2']) {
        const periods = new Meter(rule, clock).periods(now, session)
        await rowsFor.ensure(ruleKey(rule), { rule, meter: m, keyHash: hashKey(key), session, ts: now, periods, amount: 0 }, periods)
      }
    }
    const yesterday = clock.dayOf(now).start - 1
    const calls: CallRecord[] = [
      record(key, 0.001, { session: 's1' }),
      record(key, 0.002, { model: 'gpt-5-nano', session: 's1' }),
      record(key, 0.004, { model: 'gpt_5%xl', provider: 'azure', session: 's2' }),
      record(key, 0.008, { model: 'gpt-5-nano-2025', agent: 'codex', tenant: 'acme-eu' }),
      record(key, 0.016, { provider: 'anthropic', model: 'claude-opus-4-1', agent: 'codex', tenant: 'acm' }),
      record(key, 0.032, { ts: yesterday, model: 'gpt-5-mini', session: 's2' }),
      record(key, 0.064, { billing: 'subscription' }),
      record(key, 0, { status: 429 }),
      record('sk-scope-other-key', 0.128),
    ].map((c, i) => ({ ...c, call_key: `scope-${i}` }))
    await store.transaction(async (tx) => spendCounter(zone)(tx, await insertCalls(tx, calls)))

    const matches = (p: string | null, v: string) => p === null || (p.endsWith('*') ? v.startsWith(p.slice(0, -1)) : v === p)
    const rows = await store.all<{ rule_key: string; period: string; period_start: number; session: string; spent_usd: number }>(
      'SELECT rule_key, period, period_start, session, spent_usd FROM budget_spend WHERE api_key_hash = @k',
      { k: hashKey(key) },
    )
    expect(rows).toHaveLength(rules.length * 5)
    for (const row of rows) {
      const rule = rules.find((r) => ruleKey(r) === row.rule_key)!
      let want = 0
      for (const c of calls) {
        if (c.api_key_hash !== hashKey(key) || !(c.cost_usd > 0) || c.billing === 'subscription') continue
        if (!matches(rule.provider, c.provider) || !matches(rule.model_pattern, c.model) || !matches(rule.agent, c.agent) || !matches(rule.tenant, c.tenant)) continue
        const start = { daily: clock.dayOf(c.ts).start, weekly: clock.weekOf(c.ts).start, monthly: clock.monthOf(c.ts).start }[row.period as 'daily']
        if (row.period === 'session' ? c.session === row.session : start === row.period_start) want += c.cost_usd
      }
      expect({ ...row, spent_usd: Math.round(row.spent_usd * 1e6) }).toEqual({ ...row, spent_usd: Math.round(want * 1e6) })
    }
    // Not vacuous: the scopes split the calls differently.
    expect(new Set(rows.map((r) => Math.round(r.spent_usd * 1e6))).size).toBeGreaterThan(4)
  }, 60_000)
})

describe('each call once', () => {
  it('a call settled on its rule’s rows is not added to them again when stored, after a spill and a restart too', async () => {
    const url = h.database()
    const store = pgStore(url)
    await migratePostgres(store)
    const dir = h.tempDir('burnrate-pg-spend-spill-')
    const rule = blockRule('sk-spill-*')
    const key = 'sk-spill-aaaaaaaa-0001'
    const { engine, state } = engineOn(store, [rule])
    const gate = sharedBudgetGate(engine)
    const ledgerOn = () => {
      const l = new PgLedger(store, { flushIntervalMs: 20, maxPending: 10_000, timezone: 'UTC', dataDir: dir, stallMs: 2000, closeWaitMs: 2000 })
      l.onBatchTx(spendCounter(UTC))
      return l.start()
    }
    let ledger = ledgerOn()
    // Admitted while PostgreSQL answers (the row is created, the reservation taken)...
    const a = await decided(gate.admit(ctx(key)))
    expect(a.refuse).toBeUndefined()
    const b = await decided(gate.admit(ctx(key)))
    const [{ id: rowId }] = await rowsOf(store, key)
    // ...then it goes away: the calls end, their settlements wait, the ledger spills.
    h.pg.stopServer()
    let spilled: string | undefined
    let tagA: string | void
    try {
      tagA = a.settle!(0.3)
      // The rule has a daily limit only: its one row (after its reservation's id).
      expect(tagA).toMatch(new RegExp(`^[0-9a-f-]{36}:${rowId}$`))
      ledger.record(record(key, 0.3, { budget_settled: tagA as string }))
      // A call that failed settles at 0 and carries nothing; a call under no admission (stored by another path) neither.
      expect(b.settle!(0)).toBeUndefined()
      ledger.record(record(key, 0, { status: 500 }))
      ledger.record(record(key, 0.05))
      expect(await ledger.close()).toBe(false)
      const files = spillFiles(dir)
      expect(files).toHaveLength(1)
      spilled = readFileSync(files[0], 'utf8')
    } finally {
      h.pg.startServer()
    }
    // The settled rows survive the spill file.
    expect(spilled).toContain(`"budget_settled":"${tagA as string}"`)
    expect(await state.settled(20)).toBe(true)
    // A new start writes the spill file: only the untagged call is added to the row.
    ledger = ledgerOn()
    expect(await ledger.flushed()).toBe(true)
    const [row] = await rowsOf(store, key)
    expect(close(row.spent_usd, 0.35)).toBe(true)
    expect(close(row.spent_usd, await callsCost(store, hashKey(key)))).toBe(true)
    expect(row.reserved_usd).toBeLessThan(1e-12)
    await ledger.close()
    await state.close()
  }, 90_000)

  it('a rule whose limits changed: a call settled on some of its rows is still added, once stored, to the others', async () => {
    const url = h.database()
    const store = pgStore(url)
    await migratePostgres(store)
    const dir = h.tempDir('burnrate-pg-spend-limits-')
    const key = 'sk-limits-aaaaaaaa-0001'
    // Runtime rules (as the admin API makes them), so that they can be changed.
    const both: Rule = { ...blockRule('sk-limits-*'), monthly_limit_usd: 10, source: 'runtime' }
    const state = new PgBudgetState(store)
    const engine = new BudgetEngine('UTC', 1, [], [both], { worstCase: () => COST, expected: () => COST, learn: () => {} }, () => [], state)
    const gate = sharedBudgetGate(engine)
    const ledger = new PgLedger(store, { flushIntervalMs: 20, maxPending: 10_000, timezone: 'UTC', dataDir: dir })
    ledger.onBatchTx(spendCounter(UTC))
    ledger.start()
    const call = async (cost: number) => {
      const a = await decided(gate.admit(ctx(key)))
      expect(a.refuse).toBeUndefined()
      const settled = a.settle!(cost)
      ledger.record(record(key, cost, typeof settled === 'string' ? { budget_settled: settled } : {}))
    }
    try {
      await call(0.25) // reserves on the daily and the monthly row
      // The monthly limit is dropped (same key pattern and scope: the same rows), the next call reserves on the daily row only...
      engine.setRuntimeRules([{ ...blockRule('sk-limits-*'), source: 'runtime' }])
      await call(0.5)
      expect(await ledger.flushed()).toBe(true)
      expect(await state.settled()).toBe(true)
      // ...and its storing adds it to the monthly row, which it did not settle on.
      const rows = await rowsOf(store, key)
      expect(rows.map((r) => r.period).sort()).toEqual(['daily', 'monthly'])
      for (const r of rows) expect(close(r.spent_usd, 0.75)).toBe(true)
    } finally {
      await ledger.close()
      await state.close()
    }
  }, 60_000)

  it('a row created while a transaction storing a call of its key is still open counts that call once', async () => {
    const url = h.database()
    const writer = pgStore(url)
    const seeder = pgStore(url)
    await migratePostgres(writer)
    const rule = blockRule('sk-race-*')
    const key = 'sk-race-aaaaaaaa-0001'
    const clock = new PeriodClock('UTC')
    const now = Date.now()
    const day = clock.dayOf(now)
    const periods = [{ period: 'daily' as const, limit: 10, spent: 0, start: day.start, resetsAt: day.end }]
    const req = { rule, meter: new Meter(rule, clock), keyHash: hashKey(key), session: '', ts: now, periods, amount: 0 }

    // A batch stores a call and counts it (no row yet: nothing to add to), then stays open.
    let commit!: () => void
    const held = new Promise<void>((r) => (commit = r))
    let counted!: () => void
    const inside = new Promise<void>((r) => (counted = r))
    const batch = writer.transaction(async (tx) => {
      const stored = await insertCalls(tx, [{ ...record(key, 0.42, { ts: now }), call_key: 'race-1' }])
      await spendCounter(UTC)(tx, stored)
      counted()
      await held
    })
    await inside
    // The row's seed, from another connection, waits for that batch (the key's lock)...
    let done = false
    let waited: string | undefined
    const seeded = new SpendRows(seeder, new Limiter(2)).ensure(ruleKey(rule), req, periods).finally(() => (done = true))
    try {
      const waiting = await eventually(async () => {
        if (done) return 'seeded'
        const w = await writer.get<{ n: number }>(
          "SELECT COUNT(*) AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND wait_event = 'advisory' AND query LIKE '%pg_advisory_xact_lock(%'",
        )
        return w!.n === 1 ? 'waiting' : null
      }, 20_000)
      waited = waiting ?? undefined
    } finally {
      // ...and once it commits, starts from it (without the lock the seed would have read no call,
      // and the batch found no row to add to).
      commit()
    }
    await batch
    await seeded
    const [row] = await rowsOf(writer, key)
    expect(row.spent_usd).toBe(0.42)
    expect(await callsCost(writer, hashKey(key))).toBe(0.42)
    expect(waited).toBe('waiting')

    // A batch after the row exists adds to it.
    await writer.transaction(async (tx) => {
      const stored = await insertCalls(tx, [{ ...record(key, 0.08, { ts: now }), call_key: 'race-2' }])
      await spendCounter(UTC)(tx, stored)
    })
    expect(close((await rowsOf(writer, key))[0].spent_usd, 0.5)).toBe(true)
  }, 60_000)
})
