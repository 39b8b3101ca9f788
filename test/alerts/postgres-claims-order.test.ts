import { describe, expect, it } from 'vitest'
import { hashKey } from '../../src/main/proxy/attribution'
import { eventually } from '../support/http'
import { usePostgres } from '../support/pg-harness'
import { NANO_COST, NANO_FIXTURE, pgBudgetServer, replayJson } from '../budgets/support'
import { claimCall } from './pg-claims'
import { receiver } from './support'

/**
 * One call that crosses several thresholds at once (50% and the limit) announces them in order,
 * and SQLite sends them so. On PostgreSQL each was claimed on its own before it was sent, the
 * claims at once on the pool's connections: whichever claim answered first was sent first, and a
 * slower claim of the 50% (a connection being opened, a busy server) put the "limit reached"
 * alert before the warning in the team's channel. Claims are made in the order of the crossings.
 */

const h = usePostgres()

describe('thresholds crossed by one call (PostgreSQL)', () => {
  it('reach the webhook in order, whichever claim answers first', async () => {
    const hook = await receiver()
    h.onTeardown(() => hook.close())
    const budgets = { rules: [{ api_key_pattern: 'sk-claim-*', daily_limit_usd: NANO_COST * (1 - 1e-9), action: 'block', alert_at_pct: [0.5, 1] }] }
    const s = await pgBudgetServer(h, h.database(), { budgets, alerts: { webhooks: [{ url: `${hook.url}/hook`, format: 'json' }], backoff_ms: 20 } })
    replayJson(h.upstream, NANO_FIXTURE)
    // The first claim made answers 300 ms late; the others at once.
    const store = s.server.context.store
    const all = store.all.bind(store)
    let claims = 0
    store.all = (async (sql: string, params?: any) => {
      if (sql.includes('INSERT INTO alert_claims') && claims++ === 0) await new Promise((r) => setTimeout(r, 300))
      return all(sql, params)
    }) as typeof store.all
    const key = 'sk-claim-ordr-0001'
    expect((await claimCall(s, key)).status).toBe(200)
    const sent = () => hook.got.filter((g) => g.body.api_key_hash === hashKey(key)).map((g) => g.body.threshold_pct)
    await eventually(() => sent().length === 2, 20_000)
    expect(claims).toBe(2)
    expect(sent()).toEqual([0.5, 1])
  }, 90_000)
})
