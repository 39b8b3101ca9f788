import { describe, expect, it } from 'vitest'
import { DEFAULT_RULE_OPTIONS } from '../../src/shared/api'
import { BudgetEngine } from '../../src/main/budgets/engine'
import { sharedBudgetGate } from '../../src/main/budgets/gate'
import { Meter } from '../../src/main/budgets/meter'
import { MinuteRing } from '../../src/main/budgets/meter-counters'
import type { Rule } from '../../src/main/budgets/rules'
import { addCallsToSpend, moveSpendOf, spendCounter } from '../../src/main/budgets/state/pg/call-spend'
import { PgBudgetState } from '../../src/main/budgets/state/postgres'
import type { ReserveOutcome } from '../../src/main/budgets/state/types'
import { PgLedger } from '../../src/main/ledger/pg/pg-ledger'
import type { CallRecord } from '../../src/main/ledger/record'
import { openai } from '../../src/main/providers/openai'
import { hashKey } from '../../src/main/proxy/attribution'
import { keyHint } from '../../src/shared/key-hint'
import { type CallContext, type CallGate, decided } from '../../src/main/proxy/gate'
import { PostgresStore } from '../../src/main/storage/postgres'
import { PG_MIGRATIONS, migratePostgres } from '../../src/main/storage/postgres-migrations'
import type { SqlStore } from '../../src/main/storage/sql'
import { PeriodClock } from '../../src/main/time/zone'
import { eventually, postJson } from '../support/http'
import { usePostgres } from '../support/pg-harness'
import { NANO_COST, NANO_FIXTURE, pgBudgetServer, replayJson } from './support'

/**
 * Rolling windows (`window_hours` + `window_limit_usd`) shared by the instances on one
 * PostgreSQL: one window row per rule scope, key and window length, its spend in per-minute
 * buckets (`budget_window_spend`), admitted in the same statement as the call's other periods.
 * Every figure is compared with what the in-process MinuteRing gives for the same calls.
 */

const COST = 0.01
const LIMIT = 0.505
const MINUTE = 60_000
const HOUR = 3600_000

/** The start of the minute `t` falls in. */
const minuteOf = (t: number) => t - (t % MINUTE)

const h = usePostgres()

function rule(p: Partial<Rule>): Rule {
  return {
    ...DEFAULT_RULE_OPTIONS,
    api_key_pattern: 'sk-win-*', daily_limit_usd: null, monthly_limit_usd: null, action: 'block', soft_limit_pct: null,
    source: 'config', created_at: null, window_hours: 5, window_limit_usd: LIMIT, ...p,
  }
}

function ctx(key: string): CallContext {
  return {
    provider: openai,
    shape: { endpoint: 'chat.completions', model: 'gpt-4o-mini', stream: false, billable: true },
    apiKey: key, apiKeyHash: hashKey(key), keyHint: keyHint(key), tenant: '', agent: '', session: '',
    ts: Date.now(), body: {}, bodyBytes: 10,
  }
}

interface Instance {
  store: PostgresStore
  state: PgBudgetState
  gate: CallGate
  call(key: string, cost?: number, holdMs?: number): Promise<boolean>
}

async function instance(url: string, rules: Rule[], leaseMs?: number): Promise<Instance> {
  const store = new PostgresStore(url)
  await migratePostgres(store)
  // 200 admissions at once queue here on a busy machine: none is to be decided in process for the wait.
  const state = new PgBudgetState(store, { leaseMs, admissionWaitMs: 30_000 })
  const engine = new BudgetEngine('UTC', 1, rules, [], { worstCase: () => COST, expected: () => COST, learn: () => {} }, () => [], state)
  const gate = sharedBudgetGate(engine)
  h.onTeardown(async () => {
    await state.close()
    await store.close()
  })
  return {
    store,
    state,
    gate,
    async call(key, cost = COST, holdMs = 0) {
      const a = await decided(gate.admit(ctx(key)))
      if (a.refuse) {
        expect(a.refuse.status).toBe(429)
        expect(a.refuse.body).toMatchObject({ error: { type: 'budget_exceeded', period: 'window' } })
        return false
      }
      await new Promise((r) => setTimeout(r, holdMs))
      a.settle?.(cost)
      return true
    },
  }
}

async function windowRows(store: PostgresStore, key: string) {
  return store.all<{ id: number; period_start: number; spent_usd: number; reserved_usd: number; buckets: number; in_buckets: number | null }>(
    `SELECT b.id, b.period_start, b.spent_usd, b.reserved_usd,
            (SELECT COUNT(*) FROM budget_window_spend w WHERE w.spend_id = b.id) AS buckets,
            (SELECT SUM(spent_usd) FROM budget_window_spend w WHERE w.spend_id = b.id) AS in_buckets
       FROM budget_spend b WHERE b.api_key_hash = @k AND b.period = 'window' ORDER BY b.period_start`,
    { k: hashKey(key) },
  )
}

/** A call as another instance's ledger stored it: arrival `ts`, cost, and optionally another provider. */
function insertCall(store: SqlStore, key: string, ts: number, cost: number, extra: { provider?: string; billing?: string } = {}) {
  return store.run(
    `INSERT INTO calls (ts, provider, model, endpoint, api_key_hash, key_hint, tenant, agent, session, status, streamed,
       input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cache_write_1h_tokens, reasoning_tokens,
       cost_usd, priced, estimated, latency_ms, billing)
     VALUES (@ts, @provider, 'gpt-4o-mini', 'chat.completions', @k, 'sk-w...00', '', '', '', 200, 0, 1, 1, 0, 0, 0, 0, @cost, 1, 0, 5, @billing)`,
    { ts, provider: extra.provider ?? 'openai', k: hashKey(key), cost, billing: extra.billing ?? 'api' },
  )
}

/** Asks the state directly, as the engine does, with the periods of a local meter at `now`. */
function reserve(state: PgBudgetState, r: Rule, key: string, meter: Meter, now: number, amount = COST): Promise<ReserveOutcome> {
  return Promise.resolve(state.reserve({ rule: r, meter, keyHash: hashKey(key), session: '', ts: now, periods: meter.periods(now), amount }))
}

describe('a rolling window shared by two instances on one PostgreSQL', () => {
  it('200 concurrent calls split across two instances admit exactly what one alone admits; the buckets hold the admitted calls’ costs', async () => {
    const url = h.database()
    const rules = [rule({})]
    const [a, b] = [await instance(url, rules), await instance(url, rules)]
    const burst = async (instances: Instance[], key: string) => {
      const results = await Promise.all(Array.from({ length: 200 }, (_, i) => instances[i % instances.length].call(key, COST, (i * 7) % 30)))
      for (const x of instances) expect(await x.state.settled()).toBe(true)
      return results.filter(Boolean).length
    }
    const two = await burst([a, b], 'sk-win-two-instances-0001')
    const one = await burst([a], 'sk-win-one-instance-00002')
    // As for a daily limit (postgres-state.test.ts): 50 calls leave $0.005, the 51st is let in.
    expect(one).toBe(51)
    expect(two).toBe(one)
    for (const key of ['sk-win-two-instances-0001', 'sk-win-one-instance-00002']) {
      const rows = await windowRows(a.store, key)
      expect(rows).toHaveLength(1)
      expect(rows[0].period_start).toBe(5 * HOUR)
      expect(Math.abs(rows[0].in_buckets! - 51 * COST)).toBeLessThan(51 * COST * 1e-9)
      expect(rows[0].reserved_usd).toBeLessThan(1e-12)
      expect(rows[0].spent_usd).toBe(0)
    }
    expect((await a.store.get<{ n: number }>('SELECT COUNT(*) AS n FROM budget_reservations'))?.n).toBe(0)
  }, 120_000)

  it('with a daily limit too, both are admitted in one statement and a refusal names the period that refused', async () => {
    const url = h.database()
    const rules = [rule({ daily_limit_usd: 1, window_limit_usd: 0.035 })]
    const [a, b] = [await instance(url, rules), await instance(url, rules)]
    const key = 'sk-win-and-daily-aaaa-0003'
    for (const x of [a, b, a, b]) expect(await x.call(key)).toBe(x === a || x === b)
    expect(await a.state.settled()).toBe(true)
    expect(await b.state.settled()).toBe(true)
    // $0.04 in the window: over $0.035, the daily $1 is far; refused on either instance, by the window.
    const refused = await decided(b.gate.admit(ctx(key)))
    expect(refused.refuse?.body).toMatchObject({ error: { type: 'budget_exceeded', period: 'window', limit_usd: 0.035 } })
    const daily = await a.store.get<{ spent_usd: number }>("SELECT spent_usd FROM budget_spend WHERE period = 'daily' AND api_key_hash = @k", { k: hashKey(key) })
    expect(daily?.spent_usd).toBeCloseTo(0.04, 12)
  }, 60_000)

  it('a settlement that commits while admission waits for the window row’s lock is counted (the buckets are read under the lock)', async () => {
    const url = h.database()
    const r = rule({ window_limit_usd: 1 })
    const a = await instance(url, [r])
    const key = 'sk-win-lock-wait-aaaa-0004'
    expect(await a.call(key, 0.5)).toBe(true)
    expect(await a.state.settled()).toBe(true)
    const [row] = await windowRows(a.store, key)
    const other = h.store(url)
    let pending: Promise<ReserveOutcome> | null = null
    // Another instance's settlement, in one transaction: the row locked, $0.6 added to a bucket...
    await other.transaction(async (tx) => {
      await tx.run('UPDATE budget_spend SET reserved_usd = reserved_usd WHERE id = @id', { id: row.id })
      await tx.run(
        `INSERT INTO budget_window_spend (spend_id, minute, spent_usd) VALUES (@id, @m, 0.6)
         ON CONFLICT (spend_id, minute) DO UPDATE SET spent_usd = budget_window_spend.spent_usd + excluded.spent_usd`,
        { id: row.id, m: minuteOf(Date.now()) },
      )
      // ...while this instance's admission statement waits for that lock...
      const now = Date.now()
      pending = reserve(a.state, r, key, new Meter(r, new PeriodClock('UTC', 1)), now)
      await eventually(async () => {
        const w = await a.store.get<{ n: number }>(
          "SELECT COUNT(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE 'WITH want (period%'",
        )
        return (w?.n ?? 0) > 0
      }, 20_000)
    })
    // ...and then commits: the admission sees $1.1 spent, not the $0.5 of its statement's snapshot.
    const o = await pending!
    expect(o.ok).toBe(false)
    if (o.ok) return
    expect(o.kind).toBe('reached')
    expect(o.state.period).toBe('window')
    expect(o.state.spent).toBeCloseTo(1.1, 12)
  }, 60_000)
})

describe('the window’s edge and reset, as MinuteRing counts them', () => {
  it('calls recorded just inside and just outside the window count exactly as in the local meter, and a refusal’s resets_at is the meter’s', async () => {
    const url = h.database()
    const hours = 1
    const L = hours * HOUR
    const r = rule({ window_hours: hours, window_limit_usd: 20 })
    const a = await instance(url, [r])
    // The call's arrival: 25 s into a minute, so the window's start (now - 1 h) is mid-minute.
    const base = minuteOf(Date.now()) - 10 * MINUTE
    const now = base + 25_000
    const key = 'sk-win-edge-aaaaaaaa-0005'
    // Costs are powers of two: the sum says exactly which calls count.
    const calls: [number, number][] = [
      [now - L - MINUTE - 1, 1], // dropped by MinuteRing.add
      [now - L - MINUTE, 2], // dropped too (ts <= now - length - 1 min)
      [now - L - MINUTE + 1, 4], // kept by add, but its minute ended before the window's start
      [now - L - 25_001, 8], // the minute before the start's minute: ended at now - L - 1 ms
      [now - L - 25_000, 16], // the start's minute: counts (minute + 1 min > now - L)
      [now - L, 32],
      [now - L + 1, 64],
      [now - 5 * MINUTE, 128],
      [now - 1000, 256],
      [now - 3000, 512],
    ]
    for (const [t, c] of calls) await insertCall(a.store, key, t, c)
    // Not counted by either: a plan's call, and a call of another key.
    await insertCall(a.store, key, now - 2000, 1024, { billing: 'subscription' })
    await insertCall(a.store, 'sk-win-other-key-000000', now - 2000, 2048)
    const meter = new Meter(r, new PeriodClock('UTC', 1))
    for (const [t, c] of calls) meter.add(t, c, '', t, now)
    const local = meter.periods(now).find((p) => p.period === 'window')!
    expect(local.spent).toBe(16 + 32 + 64 + 128 + 256 + 512)

    const o = await reserve(a.state, r, key, meter, now)
    expect(o.ok).toBe(false)
    if (o.ok) return
    expect(o.kind).toBe('reached')
    expect(o.state.spent).toBe(local.spent)
    expect(o.state.resetsAt).toBe(local.resetsAt)
    // The seed kept the calls the window could still count, per minute.
    const buckets = await a.store.all<{ minute: number; spent_usd: number }>('SELECT minute, spent_usd FROM budget_window_spend ORDER BY minute')
    expect(buckets.reduce((s, b) => s + b.spent_usd, 0)).toBe(4 + 8 + local.spent)
    for (const b of buckets) expect(b.minute % MINUTE).toBe(0)

    // Later, as spend leaves the window: the same answers as the meter at each moment.
    // (now + 34,999 ms: the window starts 1 ms before the end of the oldest bucket's minute, which
    // still counts; at + 35,000 it has left. At local.resetsAt exactly, the last minute leaves.)
    for (const later of [now + 34_999, now + 35_000, now + 5 * MINUTE + 1, now + 56 * MINUTE - 1, local.resetsAt! - 1, local.resetsAt!]) {
      const p = meter.periods(later).find((x) => x.period === 'window')!
      const o2 = await reserve(a.state, r, key, meter, later, 0)
      if (p.spent >= r.window_limit_usd!) {
        expect(o2.ok).toBe(false)
        if (o2.ok) continue
        expect({ spent: o2.state.spent, resetsAt: o2.state.resetsAt }).toEqual({ spent: p.spent, resetsAt: p.resetsAt })
      } else {
        expect(o2.ok).toBe(true)
        if (!o2.ok) continue
        expect(o2.periods.find((x) => x.period === 'window')!.spent).toBe(p.spent)
        o2.reservation.release()
      }
    }
    expect(await a.state.settled()).toBe(true)
  }, 60_000)

  it('a window whose spend is under the limit but whose calls in flight reach it: resets_at as the meter gives it', async () => {
    const url = h.database()
    const r = rule({ window_hours: 2, window_limit_usd: 1 })
    const a = await instance(url, [r])
    const key = 'sk-win-reserved-aaaa-0006'
    const now = minuteOf(Date.now()) + 7_000
    await insertCall(a.store, key, now - 90 * MINUTE, 0.25)
    await insertCall(a.store, key, now - 30 * MINUTE, 0.5)
    const meter = new Meter(r, new PeriodClock('UTC', 1))
    meter.add(now - 90 * MINUTE, 0.25, '', 0, now)
    meter.add(now - 30 * MINUTE, 0.5, '', 0, now)
    // $0.75 spent; a call expected to cost $0.3 is in flight: the next is refused (`reserved`).
    const first = await reserve(a.state, r, key, meter, now, 0.3)
    expect(first.ok).toBe(true)
    const o = await reserve(a.state, r, key, meter, now)
    expect(o.ok).toBe(false)
    if (o.ok || !first.ok) return
    expect(o.kind).toBe('reserved')
    expect(o.reservedUsd).toBeCloseTo(0.3, 12)
    const local = meter.periods(now).find((p) => p.period === 'window')!
    expect(o.state.spent).toBe(0.75)
    expect(o.state.resetsAt).toBe(local.resetsAt)
    expect(o.state.resetsAt).toBe(now - (now % MINUTE) - 90 * MINUTE + MINUTE + 2 * HOUR)
    // Settled at $0.2: into the bucket of its arrival minute.
    first.reservation.settle(0.2)
    expect(await a.state.settled()).toBe(true)
    const [row] = await windowRows(a.store, key)
    expect(row.in_buckets).toBeCloseTo(0.95, 12)
    expect(row.reserved_usd).toBeLessThan(1e-12)
    const bucket = await a.store.get<{ spent_usd: number }>('SELECT spent_usd FROM budget_window_spend WHERE spend_id = @id AND minute = @m', {
      id: row.id,
      m: now - (now % MINUTE),
    })
    expect(bucket?.spent_usd).toBeCloseTo(0.2, 12)
  }, 60_000)

  it('a changed window_hours starts a fresh row, seeded from the calls in its own window', async () => {
    const url = h.database()
    const key = 'sk-win-changed-hours-0007'
    const five = rule({ window_hours: 5, window_limit_usd: 10 })
    const a = await instance(url, [five])
    const now = Date.now()
    await insertCall(a.store, key, now - 4 * HOUR, 3)
    await insertCall(a.store, key, now - 30 * MINUTE, 1)
    expect(await a.call(key, 0.5)).toBe(true)
    expect(await a.state.settled()).toBe(true)
    await insertCall(a.store, key, now, 0.5) // the ledger stores the call just settled
    let rows = await windowRows(a.store, key)
    expect(rows.map((x) => [x.period_start, x.in_buckets])).toEqual([[5 * HOUR, 4.5]])

    // The same rule (pattern and scope) with a 1-hour window: a new row, from the calls of the last hour.
    const one = rule({ window_hours: 1, window_limit_usd: 1.2 })
    const b = await instance(url, [one])
    const refused = await decided(b.gate.admit(ctx(key)))
    expect(refused.refuse?.body).toMatchObject({ error: { type: 'budget_exceeded', period: 'window', spent_usd: 1.5, limit_usd: 1.2 } })
    rows = await windowRows(a.store, key)
    expect(rows.map((x) => [x.period_start, x.in_buckets])).toEqual([[1 * HOUR, 1.5], [5 * HOUR, 4.5]])
  }, 60_000)

  it('pruning deletes only buckets older than the longest window (744 h) plus a day', async () => {
    const url = h.database()
    const r = rule({})
    const a = await instance(url, [r])
    const key = 'sk-win-prune-aaaaaaa-0008'
    expect(await a.call(key, 0.1)).toBe(true)
    expect(await a.state.settled()).toBe(true)
    const [row] = await windowRows(a.store, key)
    const settled = (await a.store.all<{ minute: number }>('SELECT minute FROM budget_window_spend WHERE spend_id = @id', { id: row.id })).map((x) => x.minute)
    expect(settled).toHaveLength(1)
    const m = minuteOf(Date.now())
    const old = [m - 744 * HOUR - 25 * HOUR, m - 744 * HOUR - 24 * HOUR - 10 * MINUTE]
    const kept = [m - 744 * HOUR - 23 * HOUR, m - 744 * HOUR, m - 6 * HOUR]
    for (const minute of [...old, ...kept]) {
      await a.store.run('INSERT INTO budget_window_spend (spend_id, minute, spent_usd) VALUES (@id, @minute, 1)', { id: row.id, minute })
    }
    expect(await a.state.prune()).toBe(2)
    const left = await a.store.all<{ minute: number }>('SELECT minute FROM budget_window_spend WHERE spend_id = @id ORDER BY minute', { id: row.id })
    expect(left.map((x) => x.minute)).toEqual([...kept, ...settled].sort((x, y) => x - y))
    // Their hours too (the hours of the kept minutes stay).
    const hours = await a.store.all<{ hour: number }>('SELECT hour FROM budget_window_spend_hour WHERE spend_id = @id ORDER BY hour', { id: row.id })
    expect(hours.map((x) => x.hour)).toEqual([...new Set([...kept, ...settled].map((x) => x - (x % HOUR)))].sort((x, y) => x - y))
  }, 60_000)

  it('admission reads a window from its hours and the minutes before the first whole hour: the same sum as its minutes, at every edge', async () => {
    const url = h.database()
    const a = await instance(url, [rule({ window_hours: 744 })])
    const key = 'sk-win-hours-aaaaaaa-0009'
    expect(await a.call(key, 0.25)).toBe(true)
    expect(await a.state.settled()).toBe(true)
    const [row] = await windowRows(a.store, key)
    // Buckets over 50 hours (whole numbers of dollars: every sum exact in any order), written as the
    // settlements and the stored calls write them (an upsert adding to the minute).
    const start = minuteOf(Date.now()) - 50 * HOUR
    const add = (minute: number, usd: number) =>
      a.store.run(
        `INSERT INTO budget_window_spend (spend_id, minute, spent_usd) VALUES (@id, @minute, @usd)
         ON CONFLICT (spend_id, minute) DO UPDATE SET spent_usd = budget_window_spend.spent_usd + excluded.spent_usd`,
        { id: row.id, minute, usd },
      )
    let n = 0
    for (let m = start; m < start + 50 * HOUR; m += 7 * MINUTE) await add(m, ++n)
    // More in minutes that have some (calls of the same minute), and costs moved down (re-pricing).
    for (let m = start; m < start + 50 * HOUR; m += 91 * MINUTE) await add(m, 3)
    for (let m = start + 14 * MINUTE; m < start + 50 * HOUR; m += 133 * MINUTE) await add(m, -2)
    // Every whole hour's first and last minutes, and the edges around each whole hour.
    const first = start - (start % HOUR) + HOUR
    for (let hour = first; hour < start + 50 * HOUR; hour += HOUR) {
      await add(hour, 5)
      await add(hour - MINUTE, 6)
    }
    const byMinutes = async (edge: number) =>
      (await a.store.get<{ s: number }>('SELECT COALESCE(SUM(spent_usd), 0)::float8 AS s FROM budget_window_spend WHERE spend_id = @id AND minute + 60000 > @edge::float8', { id: row.id, edge }))!.s
    const read = async (edge: number) => (await a.store.get<{ s: number }>('SELECT burnrate_window_spent(@id, @edge) AS s', { id: row.id, edge }))!.s
    const edges: number[] = []
    for (let hour = first - 2 * HOUR; hour <= start + 51 * HOUR; hour += 3 * HOUR) {
      for (const d of [-MINUTE - 1, -MINUTE, -MINUTE + 1, -1, 0, 1, MINUTE - 1, MINUTE, MINUTE + 1, 7 * MINUTE, 30 * MINUTE + 0.5]) edges.push(hour + d)
    }
    for (const edge of edges) expect({ edge, spent: await read(edge) }).toEqual({ edge, spent: await byMinutes(edge) })
    // Every hour bucket is the sum of its minutes.
    const off = await a.store.all<{ hour: number }>(
      `SELECT h.hour FROM budget_window_spend_hour h
        WHERE h.spend_id = @id AND h.spent_usd <> (SELECT SUM(m.spent_usd) FROM budget_window_spend m WHERE m.spend_id = h.spend_id AND m.minute - m.minute % 3600000 = h.hour)`,
      { id: row.id },
    )
    expect(off).toEqual([])
  }, 60_000)

  it('a database of the release before: its minute buckets make the hours at the upgrade, and its windows read the same', async () => {
    const store = h.store(h.database())
    await migratePostgres(store, PG_MIGRATIONS.filter((m) => m.version <= 11))
    const m = minuteOf(Date.now())
    const { id } = (await store.get<{ id: number }>(
      `INSERT INTO budget_spend (rule_key, api_key_hash, period, period_start, session, spent_usd, created_at)
       VALUES ('r', 'k', 'window', ${5 * HOUR}, '', 0, 0) RETURNING id`,
    ))!
    for (let i = 0; i < 400; i++) await store.run('INSERT INTO budget_window_spend (spend_id, minute, spent_usd) VALUES (@id, @minute, @usd)', { id, minute: m - i * MINUTE, usd: i + 1 })
    const edge = m - 5 * HOUR + 1234
    const before = (await store.get<{ s: number }>('SELECT burnrate_window_spent(@id, @edge) AS s', { id, edge }))!.s
    await migratePostgres(store)
    const after = (await store.get<{ s: number }>('SELECT burnrate_window_spent(@id, @edge) AS s', { id, edge }))!.s
    expect(after).toBe(before)
    expect(before).toBeGreaterThan(0)
    const hours = (await store.get<{ n: number; s: number }>('SELECT COUNT(*)::int AS n, SUM(spent_usd) AS s FROM budget_window_spend_hour WHERE spend_id = @id', { id }))!
    expect(hours.s).toBe((400 * 401) / 2)
  }, 60_000)
})

describe('a block rule with no money limit for the call', () => {
  it('a per-minute limit only (or a session limit and no session): admitted with nothing to reserve, settled without error', async () => {
    const url = h.database()
    const a = await instance(url, [rule({ window_hours: null, window_limit_usd: null, requests_per_minute: 2 })])
    const key = 'sk-win-rate-only-aaaa-0011'
    expect(await a.call(key)).toBe(true)
    expect(await a.call(key)).toBe(true)
    expect((await decided(a.gate.admit(ctx(key)))).refuse?.body).toMatchObject({ error: { type: 'rate_limited' } })
    const b = await instance(url, [rule({ api_key_pattern: 'sk-win-sess-*', window_hours: null, window_limit_usd: null, session_limit_usd: 1 })])
    expect(await b.call('sk-win-sess-no-session-0012')).toBe(true)
    expect((await a.store.get<{ n: number }>('SELECT COUNT(*) AS n FROM budget_spend'))?.n).toBe(0)
    // Not taken for PostgreSQL being away (an empty admission statement would fail).
    expect(a.state.failures + b.state.failures).toBe(0)
  }, 60_000)
})

/** The instance's ledger, as a server wires it in PostgreSQL mode: every stored call counts in the spend rows. */
function ledgerOf(store: PostgresStore): PgLedger {
  const dir = h.tempDir('burnrate-pgw-ledger-')
  const ledger = new PgLedger(store, { flushIntervalMs: 20, maxPending: 10_000, timezone: 'UTC', dataDir: dir })
  ledger.onBatchTx(spendCounter({ timezone: 'UTC', budgets: { week_start: 'monday' } }))
  ledger.start()
  h.onTeardown(() => ledger.close())
  return ledger
}

function record(key: string, ts: number, cost: number, extra: Partial<CallRecord> = {}): CallRecord {
  return {
    ts, provider: 'openai', model: 'gpt-4o-mini', endpoint: 'chat.completions', api_key_hash: hashKey(key), key_hint: keyHint(key),
    tenant: '', agent: '', session: '', status: 200, streamed: false, input_tokens: 1, output_tokens: 1, cache_read_tokens: 0,
    cache_write_tokens: 0, cache_write_1h_tokens: 0, reasoning_tokens: 0, cost_usd: cost, priced: true, estimated: false, latency_ms: 1,
    error: null, ...extra,
  }
}

/** As the proxy ends a call: admitted, settled, then recorded with what its settlement names. */
async function proxied(i: Instance, ledger: PgLedger, key: string, cost: number): Promise<void> {
  const c = ctx(key)
  const adm = await decided(i.gate.admit(c))
  expect(adm.refuse).toBeUndefined()
  const settled = adm.settle!(cost)
  ledger.record(record(key, c.ts, cost, typeof settled === 'string' ? { budget_settled: settled } : {}))
}

describe('calls stored in `calls` count in the window’s buckets', () => {
  it('calls under another rule or imported go into the minute they arrived in, once; a call settled on the window is not added again; calls too old for it add nothing', async () => {
    const url = h.database()
    const r = rule({ window_hours: 5, window_limit_usd: 0.55 })
    const a = await instance(url, [r])
    const ledger = ledgerOf(a.store)
    const key = 'sk-win-stored-calls-0013'
    await proxied(a, ledger, key, 0.1)
    const now = Date.now()
    ledger.record(record(key, now - 1000, 0.2, { model: 'gpt-4.1' })) // e.g. under a warn rule on another instance
    ledger.record(record(key, now - 2 * HOUR, 0.3, { source: 'import' })) // an imported agent log's call
    ledger.record(record(key, now - 7 * HOUR, 5, { source: 'import' })) // older than the window could count
    ledger.record(record(key, now - 1000, 9, { billing: 'subscription' })) // a plan's call: no money
    expect(await ledger.flushed()).toBe(true)
    expect(await a.state.settled()).toBe(true)
    const [row] = await windowRows(a.store, key)
    expect(row.in_buckets).toBeCloseTo(0.6, 12)
    const old = now - 2 * HOUR
    const bucket = await a.store.get<{ spent_usd: number }>('SELECT spent_usd FROM budget_window_spend WHERE spend_id = @id AND minute = @m', {
      id: row.id,
      m: old - (old % MINUTE),
    })
    expect(bucket?.spent_usd).toBeCloseTo(0.3, 12)
    const refused = await decided(a.gate.admit(ctx(key)))
    expect(refused.refuse?.body).toMatchObject({ error: { type: 'budget_exceeded', period: 'window', limit_usd: 0.55 } })
    expect((refused.refuse?.body as { error: { spent_usd: number } }).error.spent_usd).toBeCloseTo(0.6, 12)
  }, 60_000)

  it('a window row created while another instance is storing calls of the key counts them once (the seed waits for the key’s lock)', async () => {
    const url = h.database()
    const r = rule({})
    const a = await instance(url, [r])
    const key = 'sk-win-seed-race-aaaa-0014'
    const other = h.store(url)
    let pending: Promise<ReserveOutcome> | null = null
    // Another instance's ledger batch: the call inserted and counted (no window row yet), not committed...
    await other.transaction(async (tx) => {
      const c = record(key, Date.now(), 0.4)
      await insertCall(tx, key, c.ts, c.cost_usd)
      await addCallsToSpend(tx, [c], new PeriodClock('UTC', 1))
      // ...while this instance creates the window row, which waits for the batch's commit...
      let answered = false
      pending = reserve(a.state, r, key, new Meter(r, new PeriodClock('UTC', 1)), Date.now()).finally(() => (answered = true))
      await eventually(async () => {
        const w = await a.store.get<{ n: number }>(
          "SELECT COUNT(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND wait_event = 'advisory'",
        )
        return answered || (w?.n ?? 0) > 0
      }, 20_000)
    })
    // ...and then reads it from `calls`: counted once.
    const o = await pending!
    expect(o.ok).toBe(true)
    if (o.ok) o.reservation.release()
    expect(await a.state.settled()).toBe(true)
    const [row] = await windowRows(a.store, key)
    expect(row.in_buckets).toBeCloseTo(0.4, 12)
  }, 60_000)
})

describe('re-pricing', () => {
  it('a re-priced call moves the bucket of the minute it arrived in, by its change in cost, its own settlement’s included', async () => {
    const url = h.database()
    const r = rule({ window_hours: 5, window_limit_usd: 0.55 })
    const a = await instance(url, [r])
    const ledger = ledgerOf(a.store)
    const key = 'sk-win-repriced-aaaa-0015'
    await proxied(a, ledger, key, 0.1)
    expect(await ledger.flushed()).toBe(true)
    expect(await a.state.settled()).toBe(true)
    const [row] = await windowRows(a.store, key)
    const { minute, ts } = (await a.store.get<{ minute: number; ts: number }>(
      'SELECT w.minute, c.ts FROM budget_window_spend w, calls c WHERE w.spend_id = @id AND c.api_key_hash = @k',
      { id: row.id, k: hashKey(key) },
    ))!
    expect(minute).toBe(ts - (ts % MINUTE))
    const change = { api_key_hash: hashKey(key), ts, provider: 'openai', model: 'gpt-4o-mini', agent: '', tenant: '', session: '' }
    await a.store.transaction((tx) => moveSpendOf(tx, [{ ...change, delta: 0.5 }], new PeriodClock('UTC', 1)))
    expect((await windowRows(a.store, key))[0].in_buckets).toBeCloseTo(0.6, 12)
    const refused = await decided(a.gate.admit(ctx(key)))
    expect(refused.refuse?.body).toMatchObject({ error: { type: 'budget_exceeded', period: 'window' } })
    await a.store.transaction((tx) => moveSpendOf(tx, [{ ...change, delta: -0.5 }], new PeriodClock('UTC', 1)))
    expect((await windowRows(a.store, key))[0].in_buckets).toBeCloseTo(0.1, 12)
    expect(await a.call(key)).toBe(true)
  }, 60_000)
})

describe('PostgreSQL away', () => {
  it('the window is decided on the local meter, and those calls’ costs join the window’s buckets, once, when the ledger stores them', async () => {
    const url = h.database()
    const a = await instance(url, [rule({})], 600)
    const ledger = ledgerOf(a.store)
    const key = 'sk-win-database-away-0010'
    await proxied(a, ledger, key, COST)
    expect(await ledger.flushed()).toBe(true)
    expect(await a.state.settled()).toBe(true)
    h.pg.stopServer()
    try {
      await proxied(a, ledger, key, 0.2)
      expect(a.state.failures).toBeGreaterThan(0)
    } finally {
      h.pg.startServer()
    }
    await eventually(async () => {
      const [row] = await windowRows(a.store, key)
      return Math.abs((row?.in_buckets ?? 0) - (COST + 0.2)) < 1e-12
    }, 30_000)
    expect(await ledger.flushed()).toBe(true)
    expect(await a.state.settled()).toBe(true)
    const [row] = await windowRows(a.store, key)
    expect(Math.abs(row.in_buckets! - (COST + 0.2))).toBeLessThan(1e-12)
  }, 90_000)
})

describe('two servers over HTTP, one window rule', () => {
  const server = (url: string, rules: unknown[]) => pgBudgetServer(h, url, { budgets: { rules } })

  it('after the first server spent the window, the second refuses with 429 budget_exceeded, period window and its resets_at', async () => {
    const url = h.database()
    const limit = NANO_COST * 2.5
    const rules = [{ api_key_pattern: 'sk-win-http-*', window_hours: 3, window_limit_usd: limit, action: 'block' }]
    const a = await server(url, rules)
    const b = await server(url, rules)
    replayJson(h.upstream, NANO_FIXTURE)
    const key = 'sk-win-http-aaaaaaaa-0009'
    const call = (s: { url: string }) =>
      postJson(`${s.url}/v1/chat/completions`, { model: 'gpt-5-nano', messages: [{ role: 'user', content: 'hi' }] }, { authorization: `Bearer ${key}` })
    // The first server spends the window: each call waits for the last one's settlement.
    let admitted = 0
    for (let i = 0; i < 10; i++) {
      const r = await call(a)
      if (r.status === 429) break
      expect(r.status).toBe(200)
      admitted++
      await eventually(async () => {
        const [row] = await windowRows(a.store, key)
        return row && row.reserved_usd < 1e-12 && Math.abs((row.in_buckets ?? 0) - admitted * NANO_COST) < admitted * NANO_COST * 1e-9
      }, 20_000)
    }
    expect(admitted).toBe(3)
    const r = await call(b)
    expect(r.status).toBe(429)
    const err = r.json().error
    expect(err).toMatchObject({ type: 'budget_exceeded', period: 'window', api_key_pattern: 'sk-win-http-*', limit_usd: limit })
    expect(err.spent_usd).toBeCloseTo(3 * NANO_COST, 12)
    // resets_at: when the oldest minute's calls leave the window and what is left is under the limit.
    const buckets = await b.store.all<{ minute: number; spent_usd: number }>('SELECT minute, spent_usd FROM budget_window_spend ORDER BY minute')
    const ring = new MinuteRing(3 * HOUR)
    const now = Date.now()
    for (const x of buckets) ring.add(x.minute, x.spent_usd, now)
    expect(err.resets_at).toBe(new Date(ring.resetsAt(limit, now)).toISOString())
    expect(Number(r.headers['retry-after'])).toBeGreaterThan(2 * 3600)
  }, 120_000)
})
