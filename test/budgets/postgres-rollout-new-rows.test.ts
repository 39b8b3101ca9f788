import { describe, expect, it } from 'vitest'
import { hashKey } from '../../src/main/proxy/attribution'
import { eventually, postJson } from '../support/http'
import { holdRows, lockWaiters, usePostgres } from '../support/pg-harness'
import { NANO_COST, NANO_FIXTURE, pgBudgetServer, replayJson, RESERVE_BODY, RESERVE_WORST } from './support'

/**
 * Two instances on one PostgreSQL while a rule's scope is being changed (as in
 * postgres-scope-rollout.test.ts), the rule as edited having no spend rows yet: its instance
 * creates them at its first call. An admission under the rule as it was that began before they
 * existed, and waited for one of its rows (a ledger batch storing a call of the month holds the
 * monthly row), found the key's other rows with its statement's snapshot: the new rows were not
 * among them, and what the edited rule's call reserved there meanwhile was not counted. Both calls
 * were admitted where the limit had room for one.
 */

const h = usePostgres()

describe("a rule's scope changed on one instance, whose rows are created while the other instance's admission waits (PostgreSQL)", () => {
  it('two calls at once, one on each instance, never take a reserve: max_tokens rule past its limit', async () => {
    const url = h.database()
    const key = 'sk-newrows-aaaaaaaa-0001'
    const pattern = 'sk-newrows-*'
    // Two calls already spent; room for one more call's worst case, not two.
    const limit = 2 * NANO_COST + 1.5 * RESERVE_WORST
    const old = { api_key_pattern: pattern, model_pattern: 'gpt-5-nano*', daily_limit_usd: limit, monthly_limit_usd: limit, action: 'block', reserve: 'max_tokens' }
    const b = await pgBudgetServer(h, url, { budgets: { rules: [old] } })
    const call = (t: typeof b) => postJson(`${t.url}/v1/chat/completions`, RESERVE_BODY, { authorization: `Bearer ${key}` })
    replayJson(h.upstream, NANO_FIXTURE)
    expect((await call(b)).status).toBe(200)
    expect((await call(b)).status).toBe(200)
    await eventually(async () => {
      const r = await b.store.all<{ spent_usd: number; reserved_usd: number }>('SELECT spent_usd, reserved_usd FROM budget_spend WHERE api_key_hash = @k', { k: hashKey(key) })
      return r.length === 2 && r.every((x) => Math.abs(x.spent_usd - 2 * NANO_COST) < 1e-9 && x.reserved_usd < 1e-12)
    })
    await eventually(async () => (await b.store.get<{ n: number }>('SELECT COUNT(*)::int AS n FROM budget_settled WHERE owed'))?.n === 0)

    // The old rule's row locked first is held; the edited rule limits the other period alone, so
    // its admission does not queue behind the old one's.
    const rows = await b.store.all<{ period: string }>('SELECT period FROM budget_spend WHERE api_key_hash = @k ORDER BY id', { k: hashKey(key) })
    const [held, shared] = rows.map((r) => r.period)
    const edited = { api_key_pattern: pattern, model_pattern: 'gpt-5*', [`${shared}_limit_usd`]: limit, action: 'block', reserve: 'max_tokens' }
    const a = await pgBudgetServer(h, url, { budgets: { rules: [edited] } })

    replayJson(h.upstream, NANO_FIXTURE, { headerDelayMs: 3000 })
    const sent = h.upstream.requests.length
    const lock = await holdRows(b.store, 'SELECT id FROM budget_spend WHERE api_key_hash = @k AND period = @p', { k: hashKey(key), p: held })
    let replies: Awaited<ReturnType<typeof call>>[]
    try {
      const first = call(b)
      await lockWaiters(b.store, 1)
      // The edited rule's instance creates its rows and admits its call meanwhile.
      const second = call(a)
      await eventually(() => h.upstream.requests.length === sent + 1, 30_000)
      await lock.release()
      replies = await Promise.all([first, second])
    } finally {
      await lock.release()
    }
    // The old rule's call, once its rows are locked, counts the edited rule's reservation: refused.
    expect(replies.map((r) => r.status)).toEqual([429, 200])
    expect(replies[0].json().error).toMatchObject({ type: 'budget_exceeded', period: shared })
    expect(h.upstream.requests.length).toBe(sent + 1)
  }, 90_000)
})
