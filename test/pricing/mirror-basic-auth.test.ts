import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { waitForUpdate } from '@pydantic/genai-prices'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createLogger } from '../../src/main/log'
import { request } from '../support/http'
import { type TestServer, startTestServer } from '../support/server'

/**
 * A private price mirror behind HTTP basic auth, named as `pricing.update_url:
 * https://user:password@mirror/…`: the download sends the user name and password as
 * `Authorization: Basic` (undici sends nothing of a URL's credentials), and neither the price
 * status nor the log shows them.
 */
const USER = 'mirror-user'
// Characters a URL carries percent-encoded: the mirror must get them decoded.
const PASSWORD = 'p@ss:w/rd%MIRRORSECRET'
const EXPECTED = `Basic ${Buffer.from(`${USER}:${PASSWORD}`).toString('base64')}`

let mirror: http.Server
let port: number
const seen: { auth?: string; url?: string }[] = []
const lines: string[] = []
const servers: TestServer[] = []

beforeAll(async () => {
  const data = JSON.stringify(await waitForUpdate())
  mirror = http.createServer((req, res) => {
    seen.push({ auth: req.headers.authorization, url: req.url })
    if (req.headers.authorization !== EXPECTED) {
      res.writeHead(401, { 'www-authenticate': 'Basic realm="prices"' }).end('who are you')
      return
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end(data)
  })
  await new Promise<void>((r) => mirror.listen(0, '127.0.0.1', r))
  port = (mirror.address() as AddressInfo).port
})
afterAll(async () => {
  for (const s of servers) await s.cleanup()
  mirror.closeAllConnections()
  await new Promise((r) => mirror.close(r))
})

async function serverFor(updateUrl: string): Promise<TestServer> {
  const log = createLogger('debug', (l) => lines.push(l))
  const t = await startTestServer({ pricing: { update_url: updateUrl } }, undefined, undefined, { log })
  servers.push(t)
  return t
}

describe('a price mirror that requires basic auth', () => {
  it('gets the user name and password from pricing.update_url as Authorization: Basic, and the data is used', async () => {
    const t = await serverFor(`http://${USER}:${encodeURIComponent(PASSWORD)}@127.0.0.1:${port}/data.json`)
    const before = seen.length
    expect(await t.server.context.prices!.updater.update()).toBe(true)
    expect(seen.slice(before)).toEqual([{ auth: EXPECTED, url: '/data.json' }])
    const status = (await request(`${t.url}/api/dashboard/prices`)).json()
    expect(status).toMatchObject({ source: 'updated', last_error: null, url: `http://127.0.0.1:${port}/data.json` })
  })

  it('a wrong password is the mirror\'s 401, shown as such; neither password is shown or logged', async () => {
    const t = await serverFor(`http://${USER}:wrong-MIRRORSECRET@127.0.0.1:${port}/data.json`)
    expect(await t.server.context.prices!.updater.update()).toBe(false)
    const status = (await request(`${t.url}/api/dashboard/prices`)).json()
    expect(status).toMatchObject({ source: 'bundled', last_error: 'HTTP 401' })
    const all = [JSON.stringify(status), ...lines].join('\n')
    expect(lines.some((l) => l.includes('prices: updated from'))).toBe(true)
    expect(all).not.toContain('MIRRORSECRET')
    expect(all).not.toContain(EXPECTED.slice('Basic '.length))
    expect(all).not.toContain(USER)
  })

  it('an address without credentials sends no Authorization header', async () => {
    const t = await serverFor(`http://127.0.0.1:${port}/data.json`)
    const before = seen.length
    expect(await t.server.context.prices!.updater.update()).toBe(false)
    expect(seen.slice(before)).toEqual([{ auth: undefined, url: '/data.json' }])
  })
})
