import { describe, expect, it } from 'vitest'
import { hashKey } from '../../src/main/proxy/attribution'
import type { PostgresStore } from '../../src/main/storage/postgres'
import { eventually, postJson } from '../support/http'
import { holdLock, holdRows, lockWaiters, until, usePostgres } from '../support/pg-harness'
import { NANO_COST, NANO_FIXTURE, pgBudgetServer, replayJson, RESERVE_BODY, RESERVE_WORST } from './support'

/**
 * Two instances on one PostgreSQL while a rule's scope is being changed: the config file edited
 * and the instances restarted one after the other (or a runtime rule edited, before the others'
 * next poll). For that time one instance admits under the rule as it was (its spend rows) and the
 * other under the rule as it is now (rows of their own: the rule key names the scope), each
 * counting the other's reservations (README: a rule change never lets a key past its limits by
 * what it had in flight). Those were read without their rows' locks, with the statement's
 * snapshot, taken before it waited for its own rows: two admissions at once, one on each instance,
 * each missed the other's reservation, and both were admitted past a `reserve: max_tokens` limit
 * that had room for one. Here the two admissions are made to meet by holding both rows, as other
 * admissions would, until both wait.
 */

const h = usePostgres()

/**
 * Two instances on a new database, A admitting under the rule of `pattern` as it was (gpt-5-nano*)
 * and B under it as it is now (gpt-5*), a block at `limit` a day reserving max_tokens; `call`
 * makes `key`'s call on either, and one is made on each (answered 200).
 */
async function oneCallEach(key: string, pattern: string, limit: number) {
  const url = h.database()
  const rule = (model: string) => ({ api_key_pattern: pattern, model_pattern: model, daily_limit_usd: limit, action: 'block', reserve: 'max_tokens' })
  const a = await pgBudgetServer(h, url, { budgets: { rules: [rule('gpt-5-nano*')] } })
  const b = await pgBudgetServer(h, url, { budgets: { rules: [rule('gpt-5*')] } })
  const call = (t: typeof a) => postJson(`${t.url}/v1/chat/completions`, RESERVE_BODY, { authorization: `Bearer ${key}` })
  replayJson(h.upstream, NANO_FIXTURE)
  expect((await call(a)).status).toBe(200)
  expect((await call(b)).status).toBe(200)
  return { a, b, call }
}

describe("a rule's scope changed on one instance and not yet on the other (PostgreSQL)", () => {
  it("two calls admitted at once, one on each instance, never take a reserve: max_tokens rule past its limit", async () => {
    const key = 'sk-rollout-aaaaaaaa-0001'
    // Two calls already spent; room for one more call's worst case, not two.
    const limit = 2 * NANO_COST + 1.5 * RESERVE_WORST
    // One call on each: each instance's rule has its spend row, both rows count both calls.
    const { a, b, call } = await oneCallEach(key, 'sk-rollout-*', limit)
    const rows = () =>
      a.store.all<{ id: number; spent_usd: number; reserved_usd: number }>(
        "SELECT id, spent_usd, reserved_usd FROM budget_spend WHERE api_key_hash = @k AND period = 'daily' ORDER BY id",
        { k: hashKey(key) },
      )
    await eventually(async () => {
      const r = await rows()
      return r.length === 2 && r.every((x) => Math.abs(x.spent_usd - 2 * NANO_COST) < 1e-9 && x.reserved_usd < 1e-12)
    })
    await eventually(async () => (await a.store.get<{ n: number }>('SELECT COUNT(*)::int AS n FROM budget_settled WHERE owed'))?.n === 0)

    // The next call on each instance at once: both wait for their rows, held as another admission would.
    replayJson(h.upstream, NANO_FIXTURE, { headerDelayMs: 3000 })
    const sent = h.upstream.requests.length
    const held = await holdRows(a.store, "SELECT id FROM budget_spend WHERE api_key_hash = @k AND period = 'daily'", { k: hashKey(key) })
    let replies: Awaited<ReturnType<typeof call>>[]
    try {
      const both = Promise.all([call(a), call(b)])
      await lockWaiters(a.store, 2)
      await held.release()
      replies = await both
    } finally {
      await held.release()
    }
    // One admitted, the other refused for it: one call's worst case was all the room there was.
    expect(replies.map((r) => r.status).sort()).toEqual([200, 429])
    expect(replies.find((r) => r.status === 429)!.json().error).toMatchObject({ type: 'budget_exceeded', period: 'daily' })
    expect(h.upstream.requests.length).toBe(sent + 1)
  }, 90_000)

  it("a call on the other instance settled while the admission waited for its row: its cost counts, though its call is not stored yet", async () => {
    const key = 'sk-rollset-aaaaaaaa-0002'
    // Two calls already spent; room for a third call's worst case, not for its real cost and a fourth's worst case.
    const limit = 2.5 * NANO_COST + RESERVE_WORST
    const pattern = 'sk-rollset-*'
    const { a, b, call } = await oneCallEach(key, pattern, limit)
    await eventually(async () => {
      const r = await a.store.all<{ spent_usd: number }>("SELECT spent_usd FROM budget_spend WHERE api_key_hash = @k AND period = 'daily'", { k: hashKey(key) })
      return r.length === 2 && r.every((x) => Math.abs(x.spent_usd - 2 * NANO_COST) < 1e-9)
    })
    await eventually(async () => (await a.store.get<{ n: number }>('SELECT COUNT(*)::int AS n FROM budget_settled WHERE owed'))?.n === 0)

    // B's third call in flight; its settlement is to wait for B's row, and its storing for `calls`.
    replayJson(h.upstream, NANO_FIXTURE, { headerDelayMs: 1500 })
    const sent = h.upstream.requests.length
    const third = call(b)
    await eventually(() => h.upstream.requests.length === sent + 1)
    const calls = await holdLock(a.store, 'LOCK TABLE calls IN EXCLUSIVE MODE')
    let fourth: Awaited<ReturnType<typeof call>>
    try {
      const bRow = await holdRows(a.store, "SELECT id FROM budget_spend WHERE api_key_hash = @k AND period = 'daily' AND rule_key = @rk", {
        k: hashKey(key),
        rk: JSON.stringify([pattern, null, 'gpt-5*', null, null]),
      })
      try {
        expect((await third).status).toBe(200)
        await waiting(a.store, 'the settlement', '%array_agg(i.sid%')
        // A's admission queues behind it for B's row.
        const next = call(a)
        await waiting(a.store, 'the admission', 'WITH want (period%')
        await bRow.release()
        fourth = await next
      } finally {
        await bRow.release()
      }
    } finally {
      await calls.release()
    }
    // The third call's cost (owed to A's row until stored) and the fourth's worst case do not fit.
    expect(fourth.status).toBe(429)
    expect(fourth.json().error).toMatchObject({ type: 'budget_exceeded', period: 'daily' })
    expect(h.upstream.requests.length).toBe(sent + 1)
  }, 90_000)
})

/** Resolves once a statement whose text is like `like` waits on a lock. */
async function waiting(store: PostgresStore, what: string, like: string): Promise<void> {
  await until(`${what} waiting on a lock`, async () => {
    const rows = await store.all("SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database() AND query LIKE @q", { q: like })
    return rows.length > 0
  })
}
