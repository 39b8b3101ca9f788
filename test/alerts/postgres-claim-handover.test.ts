import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { describe, expect, it } from 'vitest'
import { alertsOf } from '../../src/main/alerts'
import { STANDBY_POLL_MS } from '../../src/main/alerts/handover'
import { hashKey } from '../../src/main/proxy/attribution'
import { eventually } from '../support/http'
import { usePostgres } from '../support/pg-harness'
import { NANO_COST, NANO_FIXTURE, pgBudgetServer, replayJson } from '../budgets/support'
import { type ClaimServer, claimCall, claimReady, claimSpent } from './pg-claims'

/**
 * On PostgreSQL the instance that claims a crossing for a webhook sends it there, with the
 * password its own config gives. When that one's is stale the webhook refused every attempt (401)
 * and no other instance sent it: the claim stood. A delivery that fails with the webhook never
 * having taken it lets its claim go, and an instance that lost the claim, standing by, sends it;
 * one that may have reached the webhook (no answer in time) is not sent again.
 */

const h = usePostgres()
const budgets = { rules: [{ api_key_pattern: 'sk-claim-*', daily_limit_usd: NANO_COST * 4, action: 'warn', alert_at_pct: [0.5] }] }

/** A webhook behind basic auth (alerts:new-5ecret): 401 to any other; `hang` reads a POST and never answers. */
async function authHook(o: { hang?: boolean } = {}) {
  const got: any[] = []
  const state = { posts: 0, refused: 0 }
  const good = `Basic ${Buffer.from('alerts:new-5ecret').toString('base64')}`
  const server = http.createServer(async (req, res) => {
    const parts: Buffer[] = []
    for await (const c of req) parts.push(c as Buffer)
    state.posts++
    if (req.headers.authorization !== good) {
      state.refused++
      return void res.writeHead(401).end()
    }
    got.push(JSON.parse(Buffer.concat(parts).toString('utf8')))
    if (!o.hang) res.writeHead(204).end()
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  const port = (server.address() as AddressInfo).port
  const url = (password: string) => `http://alerts:${password}@127.0.0.1:${port}/hook`
  return { url, got, state, close: () => new Promise<void>((r) => (server.close(() => r()), server.closeAllConnections())) }
}

const thresholds = (s: ClaimServer) => alertsOf(s.server.context).webhooks.deliveries().filter((d) => d.type === 'budget.threshold')

describe("a claim whose delivery fails (PostgreSQL)", () => {
  it('is let go when the webhook refused it (a stale password), and another instance with the webhook sends it, once', async () => {
    const hook = await authHook()
    h.onTeardown(() => hook.close())
    const url = h.database()
    const alerts = (password: string) => ({ webhooks: [{ url: hook.url(password), format: 'json' }], retries: 0 })
    const a = await pgBudgetServer(h, url, { budgets, alerts: alerts('old-5ecret') })
    const b = await pgBudgetServer(h, url, { budgets, alerts: alerts('new-5ecret') })
    replayJson(h.upstream, NANO_FIXTURE)
    await claimReady(a, 'sk-claim-warm-0001')
    await claimReady(b, 'sk-claim-warm-0002')
    const key = 'sk-claim-handover-0001'
    // Two calls through A: 50%. A claims it first (B sees it once stored) and is refused.
    for (let i = 0; i < 2; i++) expect((await claimCall(a, key)).status).toBe(200)
    await eventually(() => thresholds(a).some((d) => d.status === 'failed' && d.last_status === 401), 20_000)
    // B, which lost the claim, sends it with its password.
    await eventually(() => hook.got.length === 1, 20_000)
    expect(hook.got[0].api_key_hash).toBe(hashKey(key))
    await eventually(() => thresholds(b).some((d) => d.status === 'delivered'), 20_000)
    // Once: B's claim stands, settled; A does not claim it again.
    await new Promise((r) => setTimeout(r, STANDBY_POLL_MS * 2))
    expect(hook.got).toHaveLength(1)
    expect(thresholds(a)).toHaveLength(1)
  }, 90_000)

  it('is kept when the webhook may have taken it (no answer in time): no other instance sends it', async () => {
    const hook = await authHook({ hang: true })
    h.onTeardown(() => hook.close())
    const url = h.database()
    const alerts = { webhooks: [{ url: hook.url('new-5ecret'), format: 'json' }], retries: 0, timeout_ms: 300 }
    const a = await pgBudgetServer(h, url, { budgets, alerts })
    const b = await pgBudgetServer(h, url, { budgets, alerts })
    replayJson(h.upstream, NANO_FIXTURE)
    await claimReady(a, 'sk-claim-warm-0001')
    await claimReady(b, 'sk-claim-warm-0002')
    const key = 'sk-claim-handover-0002'
    for (let i = 0; i < 2; i++) expect((await claimCall(a, key)).status).toBe(200)
    await eventually(async () => (await claimSpent(b, key)) >= NANO_COST * 2 * (1 - 1e-9), 20_000)
    await eventually(() => [...thresholds(a), ...thresholds(b)].some((d) => d.status === 'failed'), 20_000)
    await new Promise((r) => setTimeout(r, STANDBY_POLL_MS * 2.5))
    expect(hook.state.posts).toBe(1)
    expect([...thresholds(a), ...thresholds(b)]).toHaveLength(1)
  }, 90_000)
})
