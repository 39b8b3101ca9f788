import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ADMIN_CONFIG, admin } from '../admin/support'
import { getJson } from '../dashboard/seed'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'

/** A webhook behind basic auth: 401 without `user`/`password`, 204 with them; records what each POST carried. */
async function basicAuthReceiver(user: string, password: string) {
  const seen: { authorization: string | undefined; body: any }[] = []
  const expected = `Basic ${Buffer.from(`${user}:${password}`, 'utf8').toString('base64')}`
  const server = http.createServer(async (req, res) => {
    const parts: Buffer[] = []
    for await (const c of req) parts.push(c as Buffer)
    seen.push({ authorization: req.headers.authorization, body: JSON.parse(Buffer.concat(parts).toString('utf8')) })
    res.writeHead(req.headers.authorization === expected ? 204 : 401).end()
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  const port = (server.address() as AddressInfo).port
  return { port, seen, close: () => new Promise<void>((r) => server.close(() => r())) }
}

let upstream: MockUpstream
let hook: Awaited<ReturnType<typeof basicAuthReceiver>>
let t: TestServer

beforeAll(async () => {
  upstream = await startMockUpstream()
  // A password with characters a URL must percent-encode ("@", ":", "/").
  hook = await basicAuthReceiver('alerts', 'p@ss:w/rd-5ecret')
  t = await startTestServer(
    { ...ADMIN_CONFIG, alerts: { webhooks: [{ url: `http://alerts:p%40ss%3Aw%2Frd-5ecret@127.0.0.1:${hook.port}/hooks/in`, format: 'json' }], retries: 0 } },
    upstream.url,
  )
})
afterAll(async () => {
  await t.cleanup()
  await hook.close()
  await upstream.close()
})

describe('a webhook whose URL carries a user name and password (basic auth)', () => {
  it('gets them as an Authorization: Basic header, and the delivery log shows neither', async () => {
    const r = await admin(t.url, 'POST', '/alerts/test')
    expect(r.status).toBe(200)
    expect(r.json().deliveries[0]).toMatchObject({ status: 'delivered', last_status: 204, last_error: null })
    expect(hook.seen).toHaveLength(1)
    expect(hook.seen[0].body.type).toBe('test')
    const log = JSON.stringify((await getJson(`${t.url}/api/dashboard/alerts`)).body)
    expect(log).not.toContain('5ecret')
    expect(log).not.toContain('alerts:')
  })
})
