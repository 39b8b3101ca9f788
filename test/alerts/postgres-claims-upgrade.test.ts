import { createHash } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { crossingKey } from '../../src/main/budgets/levels'
import { hashKey } from '../../src/main/proxy/attribution'
import { eventually } from '../support/http'
import { usePostgres } from '../support/pg-harness'
import { NANO_COST, NANO_FIXTURE, pgBudgetServer, replayJson } from '../budgets/support'
import { claimCall, claimReady } from './pg-claims'
import { receiver } from './support'

/**
 * A rolling upgrade: builds before 33f1877f named a webhook's claim by its URL with the user name
 * and password in it; this one names it without them. For a webhook behind basic auth the two
 * builds claimed a crossing under two ids, each won its own, and the channel got the alert from
 * both. A claim now takes the old build's id too (the same URL, credentials in), and wins only
 * when both are free: an old build's claim stops it, and its claim stops an old build's.
 */

const h = usePostgres()
const LIMIT = NANO_COST * 4
const budgets = { rules: [{ api_key_pattern: 'sk-claim-*', daily_limit_usd: LIMIT, action: 'warn', alert_at_pct: [0.5, 1] }] }
/** As the old builds claimed a crossing (alerts/claims.ts at 33f1877f^): the URL's href, credentials in. */
const OLD_CLAIM = `INSERT INTO alert_claims (id, owner) VALUES (@id, @owner) ON CONFLICT (id) DO NOTHING RETURNING id`

describe('a webhook with credentials during a rolling upgrade (PostgreSQL)', () => {
  it("gets a crossing once: a claim old builds made stops this one's, and this one's stops theirs", async () => {
    const hook = await receiver()
    h.onTeardown(() => hook.close())
    const hookUrl = hook.url.replace('http://', 'http://alerts:5ecret@') + '/hook'
    const url = h.database()
    const a = await pgBudgetServer(h, url, { timezone: 'UTC', budgets, alerts: { webhooks: [{ url: hookUrl, format: 'json' }], backoff_ms: 20 } })
    replayJson(h.upstream, NANO_FIXTURE)
    await claimReady(a, 'sk-claim-warm-0001')
    const key = 'sk-claim-upgrade-0001'
    const now = new Date()
    const day = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate())
    const rule = { source: 'config', api_key_pattern: 'sk-claim-*' } as any
    const oldId = (pct: number) => createHash('sha256').update(`${crossingKey(rule, hashKey(key), { period: 'daily', start: day, limit: LIMIT } as any, pct)}\njson ${new URL(hookUrl).href}`).digest('hex')
    // An instance of the old build has claimed (and sent) the 50% already.
    expect(await a.store.all(OLD_CLAIM, { id: oldId(0.5), owner: 'old-build' })).toHaveLength(1)
    // Four calls through the new one: 50%, then the limit.
    for (let i = 0; i < 4; i++) expect((await claimCall(a, key)).status).toBe(200)
    await eventually(() => hook.got.some((g) => g.body.api_key_hash === hashKey(key) && g.body.threshold_pct === 1), 20_000)
    expect(hook.got.filter((g) => g.body.api_key_hash === hashKey(key)).map((g) => g.body.threshold_pct)).toEqual([1])
    // The limit's claim stops an old build's.
    expect(await a.store.all(OLD_CLAIM, { id: oldId(1), owner: 'old-build' })).toHaveLength(0)
  }, 90_000)
})
