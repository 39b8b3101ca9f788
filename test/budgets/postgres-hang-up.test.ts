import http from 'node:http'
import { describe, expect, it } from 'vitest'
import { hashKey } from '../../src/main/proxy/attribution'
import { fixture } from '../support/fixtures'
import { eventually, openConnections, postJson, request } from '../support/http'
import { holdRows, lockWaiter, until, usePostgres } from '../support/pg-harness'
import { NANO_FIXTURE } from './support'

/**
 * Under a block rule with the budget state in PostgreSQL, a call waits on the database for its
 * admission. A client that hangs up meanwhile must not have its call sent upstream once the
 * database admits it (billed there, answered to no one, never recorded, its reservation held):
 * the call is recorded as the client's abort, at $0, and what it reserved is freed.
 */
const h = usePostgres({ upstream: () => ({ status: 200, headers: { 'content-type': 'application/json' }, body: fixture(NANO_FIXTURE) }) })

const KEY = 'sk-hangup-aaaaaaaa-0001'
const BODY = { model: 'gpt-5-nano', messages: [{ role: 'user', content: 'hi' }], max_completion_tokens: 300 }

describe('a client that hangs up while its admission waits on PostgreSQL', () => {
  it('is not sent upstream once admitted: recorded 499 at $0, its reservation freed', async () => {
    const url = h.database()
    const config = { timezone: 'UTC', budgets: { rules: [{ api_key_pattern: 'sk-hangup-*', daily_limit_usd: 100, action: 'block' }] } }
    const t = await h.server({ url, config })
    const store = h.store(url)
    // A first call creates the key's spend rows.
    expect((await postJson(`${t.url}/v1/chat/completions`, BODY, { authorization: `Bearer ${KEY}` })).status).toBe(200)
    const sent = h.upstream.requests.length
    const rows = () => store.all<{ reserved_usd: number }>('SELECT reserved_usd FROM budget_spend WHERE api_key_hash = @k', { k: hashKey(KEY) })
    await eventually(async () => ((await rows()).length > 0 && (await rows()).every((r) => r.reserved_usd === 0)) || undefined)

    // Another session holds the spend rows: the next admission waits for them.
    const held = await holdRows(store, 'SELECT id FROM budget_spend WHERE api_key_hash = @k', { k: hashKey(KEY) })
    const req = http.request(`${t.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY}` }, agent: false })
    req.on('error', () => {})
    req.end(JSON.stringify(BODY))
    // The admission is waiting on the lock, then the client leaves.
    await lockWaiter(store)
    const open = await openConnections(t.server.http)
    req.destroy()
    // The server has seen the connection close before the database answers.
    await eventually(async () => (await openConnections(t.server.http)) < open || undefined)
    await held.release()

    const aborted = await eventually(async () => {
      const r = await store.all<{ status: number; error: string | null; cost_usd: number }>(
        'SELECT status, error, cost_usd FROM calls WHERE api_key_hash = @k ORDER BY id',
        { k: hashKey(KEY) },
      )
      return r.length === 2 ? r[1] : undefined
    })
    expect(aborted).toEqual({ status: 499, error: 'client_aborted', cost_usd: 0 })
    expect(h.upstream.requests.length).toBe(sent)
    await eventually(async () => (await rows()).every((r) => r.reserved_usd === 0) || undefined)
    expect(t.server.proxy.active).toBe(0)
  })
})

/**
 * A database that does not answer an admission (here: another session holds the key's spend
 * rows locked, as an instance stuck mid-transaction would) must not hold the agent's call: past
 * `storage.budget_wait_ms` the call is decided on this instance's meters, and so are the calls
 * after it until the statement ends. When it ends and admits after all, that reservation is
 * freed: every call's cost is counted once, by the ledger storing it.
 */
describe('an admission PostgreSQL does not answer', () => {
  it('is decided in process after storage.budget_wait_ms; the late reservation is freed, each cost counted once', async () => {
    const key = 'sk-unanswered-bbbbbbbb-0002'
    const url = h.database()
    const config = { timezone: 'UTC', storage: { budget_wait_ms: 300 }, budgets: { rules: [{ api_key_pattern: 'sk-unanswered-*', daily_limit_usd: 100, action: 'block' }] } }
    const t = await h.server({ url, config })
    const store = h.store(url)
    const k = { k: hashKey(key) }
    // The schema first: with a 300 ms wait, a first call on a loaded machine could be decided before
    // the migrations end, and its spend rows would then never be made for the look below.
    await until('the schema migrated', async () => (await request(`${t.url}/api/health`)).json().storage?.ready === true)
    expect((await postJson(`${t.url}/v1/chat/completions`, BODY, { authorization: `Bearer ${key}` })).status).toBe(200)
    const rows = () => store.all<{ spent_usd: number; reserved_usd: number }>('SELECT spent_usd, reserved_usd FROM budget_spend WHERE api_key_hash = @k', k)
    await eventually(async () => ((await rows()).length > 0 && (await rows()).every((r) => r.reserved_usd === 0)) || undefined)

    const held = await holdRows(store, 'SELECT id FROM budget_spend WHERE api_key_hash = @k', k)
    let answered: number[]
    try {
      // Answered while the rows are still held: the first after the wait, the next at once.
      answered = [
        (await postJson(`${t.url}/v1/chat/completions`, BODY, { authorization: `Bearer ${key}` })).status,
        (await postJson(`${t.url}/v1/chat/completions`, BODY, { authorization: `Bearer ${key}` })).status,
      ]
      // The first call's admission is still waiting on the lock in the database.
      await lockWaiter(store)
    } finally {
      await held.release()
    }
    expect(answered).toEqual([200, 200])

    // The late admission reserved for no call: freed. Every spend row holds the three calls' costs, once.
    const costs = await eventually(async () => {
      const r = await store.all<{ cost_usd: number }>('SELECT cost_usd FROM calls WHERE api_key_hash = @k', k)
      return r.length === 3 ? r.map((x) => x.cost_usd) : undefined
    })
    const total = costs!.reduce((a, b) => a + b, 0)
    expect(total).toBeGreaterThan(0)
    await eventually(async () => {
      const r = await rows()
      const reservations = await store.all('SELECT id FROM budget_reservations')
      return (reservations.length === 0 && r.every((x) => x.reserved_usd === 0 && Math.abs(x.spent_usd - total) < 1e-12)) || undefined
    })
  })
})
