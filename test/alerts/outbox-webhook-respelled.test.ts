import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { alertsOf } from '../../src/main/alerts'
import { hashKey } from '../../src/main/proxy/attribution'
import { NANO_COST, NANO_FIXTURE, callsOf, chat, replayJson } from '../budgets/support'
import { eventually } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'

/**
 * An alert a shutdown left undelivered (SQLite: kept in alert_outbox) was matched to the next
 * start's webhooks by the URL's exact text: a webhook whose password was changed in the config
 * (the one its server had just started refusing, 401), or whose address was spelled otherwise
 * (`HTTP://`, a host's capitals, a default port), was taken as removed and its alert dropped.
 */

let upstream: MockUpstream
beforeAll(async () => {
  upstream = await startMockUpstream()
  replayJson(upstream, NANO_FIXTURE)
})
afterAll(() => upstream.close())

/** Takes a POST carrying `password` (basic auth, user `alerts`) once `up`; 401 (wrong password) or 500 (down) otherwise. */
async function hook(password: string) {
  const got: any[] = []
  const state = { up: false }
  const expected = `Basic ${Buffer.from(`alerts:${password}`).toString('base64')}`
  const server = http.createServer(async (req, res) => {
    const parts: Buffer[] = []
    for await (const c of req) parts.push(c as Buffer)
    if (req.headers.authorization !== expected) return void res.writeHead(401).end()
    if (!state.up) return void res.writeHead(500).end()
    got.push(JSON.parse(Buffer.concat(parts).toString('utf8')))
    res.writeHead(204).end()
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  const port = (server.address() as AddressInfo).port
  return { port, got, state, close: () => new Promise<void>((r) => server.close(() => r())) }
}

const configOf = (url: string, pattern: string) => ({
  timezone: 'UTC',
  alerts: { webhooks: [{ url, format: 'json' }], backoff_ms: 60_000, retries: 3 },
  budgets: { rules: [{ api_key_pattern: pattern, daily_limit_usd: NANO_COST * 4, action: 'warn', alert_at_pct: [0.5] }] },
})

/** Crosses 50% with two calls, waits for the webhook's first answer (`status`), and stops the server, the retry waiting. */
async function leaveUndelivered(url: string, key: string, pattern: string, status: number): Promise<{ dir: string; id: string }> {
  const t = await startTestServer(configOf(url, pattern), upstream.url)
  for (let i = 0; i < 2; i++) {
    expect((await chat(t, key)).status).toBe(200)
    await eventually(() => callsOf(t, key).length === i + 1)
  }
  const sender = alertsOf(t.server.context).webhooks
  await eventually(() => sender.deliveries()[0]?.last_status === status)
  const id = sender.deliveries()[0].event_id
  await t.stop()
  return { dir: t.dir, id }
}

describe('an alert kept for the next start, its webhook spelled otherwise there (SQLite)', () => {
  it('is sent by the next start after the webhook\'s password was changed in the config', async () => {
    const h = await hook('new-pass')
    h.state.up = true
    const KEY = 'sk-pwchg-aaaaaaaaaaaa-0001'
    let t: TestServer | null = null
    try {
      const { dir, id } = await leaveUndelivered(`http://alerts:old-pass@127.0.0.1:${h.port}/hook`, KEY, 'sk-pwchg-*', 401)
      t = await startTestServer(configOf(`http://alerts:new-pass@127.0.0.1:${h.port}/hook`, 'sk-pwchg-*'), upstream.url, dir)
      await eventually(() => h.got.length === 1, 10_000)
      expect(h.got[0]).toMatchObject({ type: 'budget.threshold', id, threshold_pct: 0.5, api_key_hash: hashKey(KEY) })
    } finally {
      await t?.cleanup()
      await h.close()
    }
  })

  it('is sent by the next start to the same address spelled otherwise (HTTP://)', async () => {
    const h = await hook('pw')
    const KEY = 'sk-spell-aaaaaaaaaaaa-0001'
    let t: TestServer | null = null
    try {
      const { dir, id } = await leaveUndelivered(`http://alerts:pw@127.0.0.1:${h.port}/hook`, KEY, 'sk-spell-*', 500)
      h.state.up = true
      t = await startTestServer(configOf(`HTTP://alerts:pw@127.0.0.1:${h.port}/hook`, 'sk-spell-*'), upstream.url, dir)
      await eventually(() => h.got.length === 1, 10_000)
      expect(h.got[0]).toMatchObject({ type: 'budget.threshold', id, threshold_pct: 0.5, api_key_hash: hashKey(KEY) })
    } finally {
      await t?.cleanup()
      await h.close()
    }
  })
})
