import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ADMIN_CONFIG, admin } from '../admin/support'
import { getJson } from '../dashboard/seed'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'
import { receiver } from './support'

/**
 * A webhook whose URL's password holds a "%" not followed by two hex digits (`alerts:100%-5ecret@…`:
 * a URL takes it as written, and the config accepted it). Decoding it for the Authorization header
 * threw (URI malformed) while the alert was being queued: no webhook listed after it got the alert
 * either, the delivery stayed "pending" in the log for good, and POST /api/admin/alerts/test failed.
 * Such a "%" is the password's own character: it is sent as written.
 */

let upstream: MockUpstream
let t: TestServer
let plain: Awaited<ReturnType<typeof receiver>>
const seen: (string | undefined)[] = []
let server: http.Server

beforeAll(async () => {
  upstream = await startMockUpstream()
  server = http.createServer(async (req, res) => {
    for await (const _ of req) void _
    seen.push(req.headers.authorization)
    res.writeHead(req.headers.authorization === `Basic ${Buffer.from('alerts:100%-5ecret').toString('base64')}` ? 204 : 401).end()
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  plain = await receiver()
  const port = (server.address() as AddressInfo).port
  t = await startTestServer(
    { ...ADMIN_CONFIG, alerts: { webhooks: [{ url: `http://alerts:100%-5ecret@127.0.0.1:${port}/hook`, format: 'json' }, { url: `${plain.url}/other`, format: 'json' }], retries: 0 } },
    upstream.url,
  )
})
afterAll(async () => {
  await t.cleanup()
  await plain.close()
  await new Promise<void>((r) => server.close(() => r()))
  await upstream.close()
})

describe('a webhook password with a bare "%"', () => {
  it('is sent as written, and every webhook gets the alert', async () => {
    const r = await admin(t.url, 'POST', '/alerts/test')
    expect(r.status).toBe(200)
    expect(r.json().deliveries.map((d: any) => [d.status, d.last_status])).toEqual([['delivered', 204], ['delivered', 204]])
    expect(seen).toEqual([`Basic ${Buffer.from('alerts:100%-5ecret').toString('base64')}`])
    expect(plain.got.map((g) => g.body.type)).toEqual(['test'])
    const log = JSON.stringify((await getJson(`${t.url}/api/dashboard/alerts`)).body)
    expect(log).not.toContain('5ecret')
    expect(log).not.toContain('pending')
  })
})
