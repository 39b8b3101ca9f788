import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { alertsOf } from '../../src/main/alerts'
import { NANO_COST, NANO_FIXTURE, chat, replayJson } from '../budgets/support'
import { eventually } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { startTestServer } from '../support/server'

/**
 * An alert waiting for the first attempt of the one before it to the same webhook (a call crossed
 * 50% and the limit; the webhook does not answer the 50%) when the server stops: never tried, it
 * is logged failed and kept for the next start, which sends it; the 50%, cut without an answer,
 * is not sent again (the webhook may have taken it).
 */

/** Never answers its first POST; takes the others: the thresholds it took, and how many POSTs came. */
async function hangsFirst() {
  const got: number[] = []
  let posts = 0
  const server = http.createServer(async (req, res) => {
    const parts: Buffer[] = []
    for await (const c of req) parts.push(c as Buffer)
    if (posts++ === 0) return
    got.push(JSON.parse(Buffer.concat(parts).toString('utf8')).threshold_pct)
    res.writeHead(204).end()
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    got,
    posts: () => posts,
    close: () =>
      new Promise<void>((r) => {
        server.close(() => r())
        server.closeAllConnections()
      }),
  }
}

let upstream: MockUpstream
beforeAll(async () => {
  upstream = await startMockUpstream()
  replayJson(upstream, NANO_FIXTURE)
})
afterAll(() => upstream.close())

describe('an alert waiting its turn at shutdown (SQLite)', () => {
  it('is logged failed and sent by the next start; the one cut without an answer is not', async () => {
    const hook = await hangsFirst()
    const config = {
      timezone: 'UTC',
      alerts: { webhooks: [{ url: `${hook.url}/hook`, format: 'json' }], timeout_ms: 60_000 },
      budgets: { rules: [{ api_key_pattern: 'sk-turn-*', daily_limit_usd: NANO_COST * (1 - 1e-9), action: 'warn', alert_at_pct: [0.5, 1] }] },
    }
    let t = await startTestServer(config, upstream.url)
    try {
      expect((await chat(t, 'sk-turn-aaaaaaaaaaaa-0001')).status).toBe(200)
      const sender = alertsOf(t.server.context).webhooks
      await eventually(() => hook.posts() === 1 && sender.deliveries().length === 2)
      const [limit, half] = sender.deliveries()
      expect(limit.attempts).toBe(0)
      t = await t.restart()
      expect(limit).toMatchObject({ status: 'failed', attempts: 0 })
      expect(limit.last_error).toMatch(/shut down/)
      expect(half.status).toBe('failed')
      await eventually(() => hook.got.length === 1, 10_000)
      expect(hook.got).toEqual([1])
      expect(hook.posts()).toBe(2)
    } finally {
      await t.cleanup()
      await hook.close()
    }
  })
})
