import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { waitForUpdate } from '@pydantic/genai-prices'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createLogger } from '../../src/main/log'
import { request } from '../support/http'
import { type TestServer, startTestServer } from '../support/server'

/**
 * `pricing.update_url` may name a private mirror with its credentials (`https://user:password@…`,
 * `?token=…`). The dashboard's price status (`GET /api/dashboard/prices`, which every user of the
 * machine may read when dashboard.token is not set) and the log name the mirror, never them.
 */
let prices: http.Server
let t: TestServer
let stale: TestServer
const lines: string[] = []
const seen: { auth?: string; url?: string }[] = []

beforeAll(async () => {
  const data = JSON.stringify(await waitForUpdate())
  prices = http.createServer((req, res) => {
    seen.push({ auth: req.headers.authorization, url: req.url })
    if (req.url?.startsWith('/broken')) res.writeHead(500).end('no')
    else res.writeHead(200, { 'content-type': 'application/json' }).end(data)
  })
  await new Promise<void>((r) => prices.listen(0, '127.0.0.1', r))
  const port = (prices.address() as AddressInfo).port
  const log = createLogger('debug', (l) => lines.push(l))
  t = await startTestServer({ pricing: { update_url: `http://mirror:MIRRORPASSWORD@127.0.0.1:${port}/data.json?token=MIRRORTOKEN` } }, undefined, undefined, { log })
  stale = await startTestServer({ pricing: { update_url: `http://mirror:MIRRORPASSWORD@127.0.0.1:${port}/broken/data.json?token=MIRRORTOKEN` } }, undefined, undefined, { log })
})
afterAll(async () => {
  await t?.cleanup()
  await stale?.cleanup()
  prices.closeAllConnections()
  await new Promise((r) => prices.close(r))
})

describe('a price mirror with credentials in pricing.update_url', () => {
  it('is named without them in the price status and the log, updated or failing', async () => {
    expect(await t.server.context.prices!.updater.update()).toBe(true)
    expect(await stale.server.context.prices!.updater.update()).toBe(false)
    // (They do go to the mirror.)
    expect(seen[0].url).toBe('/data.json?token=MIRRORTOKEN')
    const shown = [(await request(`${t.url}/api/dashboard/prices`)).text, (await request(`${stale.url}/api/dashboard/prices`)).text]
    expect(JSON.parse(shown[0]).url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/data\.json/)
    const all = [...shown, ...lines].join('\n')
    expect(lines.some((l) => l.includes('prices: updated from'))).toBe(true)
    expect(all).not.toContain('MIRRORPASSWORD')
    expect(all).not.toContain('MIRRORTOKEN')
  })
})
