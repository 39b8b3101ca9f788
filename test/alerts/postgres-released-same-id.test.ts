import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { describe, expect, it } from 'vitest'
import { budgetsOf } from '../../src/main/budgets'
import { hashKey } from '../../src/main/proxy/attribution'
import { getJson } from '../dashboard/seed'
import { eventually } from '../support/http'
import { usePostgres } from '../support/pg-harness'
import { NANO_COST, NANO_FIXTURE, pgBudgetServer, replayJson } from '../budgets/support'
import { claimCall } from './pg-claims'

/**
 * On PostgreSQL a calendar period's alert whose retry waits at shutdown has its claim let go, and
 * the next instance to read the crossing back sends it (./postgres-retry-after.test.ts). The
 * attempt before may have reached the webhook (it took the alert and answered too late: a
 * timeout), so the webhook can get it twice; it went with a new `id` each time, and a JSON
 * receiver could not tell the second for the same alert. It keeps its id, as on SQLite.
 */

const h = usePostgres()
const budgets = { rules: [{ api_key_pattern: 'sk-claim-*', daily_limit_usd: NANO_COST * 4, action: 'warn', alert_at_pct: [0.5] }] }

/** Records every POST's body; never answers the first (the sender's timeout cuts it), takes the others. */
async function slowFirst() {
  const got: any[] = []
  const server = http.createServer(async (req, res) => {
    const parts: Buffer[] = []
    for await (const c of req) parts.push(c as Buffer)
    got.push(JSON.parse(Buffer.concat(parts).toString('utf8')))
    if (got.length > 1) res.writeHead(204).end()
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`
  return { url, got, close: () => new Promise<void>((r) => { server.close(() => r()); server.closeAllConnections() }) }
}

describe('an alert whose claim is let go at shutdown (PostgreSQL)', () => {
  it('is sent by the next instance with the id it was first sent with', async () => {
    const wh = await slowFirst()
    h.onTeardown(() => wh.close())
    const config = { budgets, alerts: { webhooks: [{ url: wh.url, format: 'json' }], backoff_ms: 60_000, retries: 3, timeout_ms: 300 } }
    const url = h.database()
    replayJson(h.upstream, NANO_FIXTURE)
    const key = 'sk-claim-sameid-0001'
    const a = await pgBudgetServer(h, url, config)
    for (let i = 0; i < 2; i++) expect((await claimCall(a, key)).status).toBe(200)
    // Taken by the webhook, cut by the timeout: the retry waits a minute.
    await eventually(async () => (await getJson(`${a.url}/api/dashboard/alerts`)).body.deliveries.some((d: any) => d.type === 'budget.threshold' && d.attempts === 1 && d.last_error !== null), 20_000)
    await a.server.ledger.flushed()
    await a.stop()
    const b = await pgBudgetServer(h, url, config)
    await eventually(() => (budgetsOf(b.server.context).feed?.stats.reloads ?? 0) > 0, 20_000)
    await eventually(() => wh.got.length === 2, 20_000)
    expect(wh.got.map((g) => [g.type, g.api_key_hash, g.threshold_pct])).toEqual([
      ['budget.threshold', hashKey(key), 0.5],
      ['budget.threshold', hashKey(key), 0.5],
    ])
    expect(wh.got[1].id).toBe(wh.got[0].id)
  }, 120_000)
})
