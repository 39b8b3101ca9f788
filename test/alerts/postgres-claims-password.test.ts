import { describe, expect, it } from 'vitest'
import { alertsOf } from '../../src/main/alerts'
import { hashKey } from '../../src/main/proxy/attribution'
import { eventually } from '../support/http'
import { usePostgres } from '../support/pg-harness'
import { NANO_COST, NANO_FIXTURE, pgBudgetServer, replayJson } from '../budgets/support'
import { type ClaimServer, claimCall, claimReady, claimSpent } from './pg-claims'
import { receiver } from './support'

/**
 * Two instances on one PostgreSQL whose configs give the team's webhook two passwords (one not
 * yet given the new one: `http://alerts:old@…/hook` and `http://alerts:new@…/hook`): each claimed
 * a crossing under its own URL, password included, both won, and the channel got every alert
 * twice. A claim names the webhook by where it is POSTed, without its user name and password.
 */

const h = usePostgres()

/** How many alert claims `s` has had answered. */
function countClaims(s: ClaimServer): () => number {
  const store = s.server.context.store
  const all = store.all.bind(store)
  let answered = 0
  store.all = (async (sql: string, params?: any) => {
    const rows = await all(sql, params)
    if (sql.includes('INSERT INTO alert_claims')) answered++
    return rows
  }) as typeof store.all
  // A webhook with credentials is claimed under the old builds' name too, in one transaction.
  const transaction = store.transaction.bind(store)
  store.transaction = (async (fn: any) => {
    let claims = false
    try {
      return await transaction((tx) => {
        const txAll = tx.all.bind(tx)
        tx.all = ((sql: string, params?: any) => {
          if (sql.includes('INSERT INTO alert_claims')) claims = true
          return txAll(sql, params)
        }) as typeof tx.all
        return fn(tx)
      })
    } finally {
      if (claims) answered++
    }
  }) as typeof store.transaction
  return () => answered
}

describe('one webhook given two passwords by two instances (PostgreSQL)', () => {
  it('gets a crossing once', async () => {
    const hook = await receiver()
    h.onTeardown(() => hook.close())
    const budgets = { rules: [{ api_key_pattern: 'sk-claim-*', daily_limit_usd: NANO_COST * 4, action: 'warn', alert_at_pct: [0.5] }] }
    const url = h.database()
    const withPassword = (password: string) => ({ webhooks: [{ url: hook.url.replace('http://', `http://alerts:${password}@`) + '/hook', format: 'json' }], backoff_ms: 20 })
    const a = await pgBudgetServer(h, url, { budgets, alerts: withPassword('old-5ecret') })
    const b = await pgBudgetServer(h, url, { budgets, alerts: withPassword('new-5ecret') })
    replayJson(h.upstream, NANO_FIXTURE)
    await claimReady(a, 'sk-claim-warm-0001')
    await claimReady(b, 'sk-claim-warm-0002')
    const [claimedA, claimedB] = [countClaims(a), countClaims(b)]
    const key = 'sk-claim-pass-0001'
    // Two calls through A: 50%. B counts them too and sees it crossed.
    for (let i = 0; i < 2; i++) expect((await claimCall(a, key)).status).toBe(200)
    await a.server.ledger.flushed()
    await eventually(async () => (await claimSpent(b, key)) >= NANO_COST * 2 * (1 - 1e-9), 20_000)
    // Both have asked for the crossing's claim, and the winner has sent it.
    await eventually(() => claimedA() >= 1 && claimedB() >= 1 && hook.got.length >= 1, 20_000)
    // One claim won (its rows: this build's name, and the old builds' under the winner's password).
    expect(await a.store.all('SELECT DISTINCT owner FROM alert_claims')).toHaveLength(1)
    const made = [a, b].flatMap((s) => alertsOf(s.server.context).webhooks.deliveries()).filter((d) => d.type === 'budget.threshold')
    expect(made).toHaveLength(1)
    await eventually(() => made[0].status === 'delivered', 20_000)
    expect(hook.got.filter((g) => g.body.api_key_hash === hashKey(key)).map((g) => g.body.threshold_pct)).toEqual([0.5])
  }, 90_000)
})
