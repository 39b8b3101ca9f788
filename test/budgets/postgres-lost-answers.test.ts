import { afterAll, describe, expect, it } from 'vitest'
import { DEFAULT_RULE_OPTIONS } from '../../src/shared/api'
import { Meter } from '../../src/main/budgets/meter'
import type { Rule } from '../../src/main/budgets/rules'
import { addCallsToSpend } from '../../src/main/budgets/state/pg/call-spend'
import { PgBudgetState } from '../../src/main/budgets/state/postgres'
import type { ReserveRequest } from '../../src/main/budgets/state/types'
import { insertCalls } from '../../src/main/ledger/pg/insert'
import type { CallRecord } from '../../src/main/ledger/record'
import { PostgresStore } from '../../src/main/storage/postgres'
import { migratePostgres } from '../../src/main/storage/postgres-migrations'
import { PeriodClock } from '../../src/main/time/zone'
import { eventually } from '../support/http'
import { usePostgres } from '../support/pg-harness'
import { type CutProxy, cutProxy } from './pg-cut-proxy'

/**
 * An instance whose connection to PostgreSQL is cut after a statement committed (its answer
 * lost), or that stops while PostgreSQL is away: what it settled and reserved is counted once,
 * and nothing it no longer owns holds budget.
 */
const h = usePostgres({ upstream: false })
const clock = new PeriodClock('UTC')
const proxies: CutProxy[] = []
const stores: PostgresStore[] = []
afterAll(async () => {
  for (const s of stores) await s.close().catch(() => {})
  for (const p of proxies) await p.close()
})

function rule(p: Partial<Rule> = {}): Rule {
  return {
    ...DEFAULT_RULE_OPTIONS, api_key_pattern: 'sk-*', daily_limit_usd: 1, monthly_limit_usd: null, action: 'block', soft_limit_pct: null,
    source: 'config', created_at: null, ...p,
  } as Rule
}

function request(r: Rule, key: string, amount: number): ReserveRequest {
  const meter = new Meter(r, clock)
  const ts = Date.now()
  return { rule: r, meter, keyHash: key, session: '', ts, periods: meter.periods(ts), amount }
}

async function setup() {
  const url = h.database()
  const direct = new PostgresStore(url)
  stores.push(direct)
  await migratePostgres(direct)
  const proxy = await cutProxy(h.pg.port)
  proxies.push(proxy)
  const store = new PostgresStore(proxy.url(url))
  stores.push(store)
  return { url, direct, proxy, store }
}

const row = async (s: PostgresStore, key: string) =>
  (await s.get<{ spent_usd: number; reserved_usd: number }>('SELECT spent_usd, reserved_usd FROM budget_spend WHERE api_key_hash = @key', { key }))!

/** The ledger stores a call of `key` (from memory, or its spill file after a restart) carrying its reservation's `budget_settled`. */
async function storeCall(s: PostgresStore, key: string, cost: number, settles: string | undefined): Promise<void> {
  const call: CallRecord = {
    ts: Date.now(), provider: 'openai', model: 'gpt-4o-mini', endpoint: 'chat.completions', api_key_hash: key, key_hint: 'sk-…', tenant: '',
    agent: '', session: '', status: 200, streamed: false, input_tokens: 10, output_tokens: 10, cache_read_tokens: 0, cache_write_tokens: 0,
    cache_write_1h_tokens: 0, reasoning_tokens: 0, cost_usd: cost, priced: true, estimated: false, latency_ms: 5, error: null,
    response_id: 'r1', source: 'proxy', billing: 'api', project: '', member: '', requested_model: null, usage_extra: null,
    call_key: `inst:${key}`, budget_settled: settles,
  } as unknown as CallRecord
  await s.transaction(async (tx) => {
    const stored = await insertCalls(tx, [call])
    await addCallsToSpend(tx, stored as unknown as CallRecord[], clock)
  })
}

const inCalls = async (s: PostgresStore, key: string) =>
  (await s.get<{ s: number }>('SELECT SUM(cost_usd) AS s FROM calls WHERE api_key_hash = @key', { key }))!.s

describe('an instance losing PostgreSQL mid-statement', () => {
  it('a settlement whose answer is lost (committed, connection cut) is counted once when retried', async () => {
    const { direct, proxy, store } = await setup()
    const state = new PgBudgetState(store, { leaseMs: 30_000 })
    const key = 'key-settle-twice'
    const r = rule()
    const o = await state.reserve(request(r, key, 0.01))
    expect(o.ok).toBe(true)
    if (!o.ok) return
    // The settlement statement commits, then the connection drops before its answer arrives.
    const cut = proxy.cutAfter('DELETE FROM budget_reservations r USING input')
    o.reservation.settle(0.1)
    await cut
    expect(await state.settled(5)).toBe(true)
    const after = await row(direct, key)
    // The call cost $0.10: the row must hold $0.10, not $0.20.
    expect(after.spent_usd).toBeCloseTo(0.1, 9)
    expect(after.reserved_usd).toBe(0)
    await state.close()
  }, 30_000)

  it('the same on a rolling window: the bucket of its minute is added to once', async () => {
    const { direct, proxy, store } = await setup()
    const state = new PgBudgetState(store, { leaseMs: 30_000 })
    const key = 'key-settle-twice-window'
    const o = await state.reserve(request(rule({ daily_limit_usd: null, window_hours: 5, window_limit_usd: 1 } as Partial<Rule>), key, 0.01))
    expect(o.ok).toBe(true)
    if (!o.ok) return
    const cut = proxy.cutAfter('DELETE FROM budget_reservations r USING input')
    o.reservation.settle(0.1)
    await cut
    expect(await state.settled(5)).toBe(true)
    const buckets = await direct.get<{ s: number }>(
      'SELECT SUM(w.spent_usd) AS s FROM budget_window_spend w JOIN budget_spend b ON b.id = w.spend_id WHERE b.api_key_hash = @key',
      { key },
    )
    expect(buckets!.s).toBeCloseTo(0.1, 9)
    expect((await row(direct, key)).reserved_usd).toBe(0)
    await state.close()
  }, 30_000)

  it('an admission whose answer is lost does not hold budget forever on a living instance', async () => {
    const { url, direct, proxy, store } = await setup()
    const LEASE = 300
    const a = new PgBudgetState(store, { leaseMs: LEASE, instance: 'A' })
    const otherStore = new PostgresStore(url)
    stores.push(otherStore)
    const b = new PgBudgetState(otherStore, { leaseMs: LEASE, instance: 'B' })
    const key = 'key-admission-lost'
    const r = rule({ reserve: 'max_tokens' } as Partial<Rule>)
    // Create the row first (so the cut hits the admission statement itself).
    const warm = await b.reserve(request(r, key, 0.01))
    if (warm.ok) warm.reservation.release()
    await b.settled()
    // A's admission commits a $0.60 reservation; its answer is lost. A decides the call in process.
    const cut = proxy.cutAfter('INSERT INTO budget_reservations (id, spend_id')
    const oa = await a.reserve(request(r, key, 0.6))
    await cut
    expect(oa.ok).toBe(true) // decided in process (degraded)
    if (oa.ok) oa.reservation.settle(0) // the call ended (nothing written: no shared reservation known)
    // A lives on (its tick renewing what its calls hold): the orphan runs out with its lease, and
    // B is admitted a $0.60 worst case against a $1 day where nothing was spent and no call is in flight.
    await eventually(async () => (await direct.all('SELECT 1 FROM budget_reservations')).length === 0)
    expect((await row(direct, key)).reserved_usd).toBe(0)
    const ob = await b.reserve(request(r, key, 0.6))
    expect(ob.ok).toBe(true)
    if (ob.ok) ob.reservation.release()
    await a.close()
    await b.close()
  }, 30_000)

  it('a settlement still unwritten when the instance stops (PostgreSQL away) is not lost from the spend row', async () => {
    const { direct, proxy, store } = await setup()
    const state = new PgBudgetState(store, { leaseMs: 30_000 })
    const key = 'key-settlement-lost'
    const r = rule()
    const o = await state.reserve(request(r, key, 0.01))
    expect(o.ok).toBe(true)
    if (!o.ok) return
    // PostgreSQL goes away; the call ends and settles (kept pending); the instance stops.
    proxy.setDown(true)
    o.reservation.settle(0.25)
    await state.close()
    expect(state.pendingSettlements).toBe(1) // never written
    proxy.setDown(false)
    // The ledger stores the call (from memory or its spill file after a restart), carrying budget_settled.
    await storeCall(direct, key, 0.25, o.reservation.settles)
    expect(await inCalls(direct, key)).toBeCloseTo(0.25, 9)
    // The spend row must agree with the ledger: $0.25 spent.
    expect((await row(direct, key)).spent_usd).toBeCloseTo(0.25, 9)
    // The instance's pending settlement written after all (it frees the reservation): not added again.
    expect(await state.settled(20)).toBe(true)
    expect(await row(direct, key)).toEqual({ spent_usd: expect.closeTo(0.25, 9), reserved_usd: 0 })
  }, 30_000)

  it('a call stored more than a week after its settlement was written (its spill file written at a restart) is counted once', async () => {
    const { direct, store } = await setup()
    const state = new PgBudgetState(store, { leaseMs: 30_000 })
    const key = 'key-late-spill'
    const o = await state.reserve(request(rule(), key, 0.01))
    expect(o.ok).toBe(true)
    if (!o.ok) return
    // The call ends: its settlement ($0.25) is written at once; the ledger's write of the call is
    // not (PostgreSQL went away right after), so the call waits in a spill file.
    o.reservation.settle(0.25)
    expect(await state.settled(5)).toBe(true)
    expect((await row(direct, key)).spent_usd).toBeCloseTo(0.25, 9)
    // The instance restarts 8 days later; meanwhile the instances' ticks swept week-old markers.
    const age = "UPDATE budget_settled SET at = now() - interval '8 days'"
    await direct.run(age)
    await state.sweep()
    await storeCall(direct, key, 0.25, o.reservation.settles)
    expect(await inCalls(direct, key)).toBeCloseTo(0.25, 9)
    // The row agrees with the ledger ($0.25), not counting the call twice ($0.50).
    expect((await row(direct, key)).spent_usd).toBeCloseTo(0.25, 9)
    // Its call stored, the marker is no longer needed past the retries' week: the sweep deletes it,
    // as it does a week-old one whose settlement added nothing (a release).
    const o2 = await state.reserve(request(rule(), key, 0.01))
    expect(o2.ok).toBe(true)
    if (o2.ok) o2.reservation.release()
    expect(await state.settled(5)).toBe(true)
    expect((await direct.all('SELECT rid FROM budget_settled')).length).toBe(2)
    await direct.run(age)
    await state.sweep()
    expect(await direct.all('SELECT rid FROM budget_settled')).toEqual([])
    // A settlement whose call never comes (its instance lost it): its marker goes after 60 days, not never.
    const o3 = await state.reserve(request(rule(), key, 0.01))
    expect(o3.ok).toBe(true)
    if (o3.ok) o3.reservation.settle(0.25)
    expect(await state.settled(5)).toBe(true)
    await direct.run("UPDATE budget_settled SET at = now() - interval '59 days'")
    await state.sweep()
    expect((await direct.all('SELECT rid FROM budget_settled')).length).toBe(1)
    await direct.run("UPDATE budget_settled SET at = now() - interval '61 days'")
    await state.sweep()
    expect(await direct.all('SELECT rid FROM budget_settled')).toEqual([])
    await state.close()
  }, 30_000)
})
