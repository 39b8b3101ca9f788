import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Reply, request } from '../support/http'
import { type TestServer, startTestServer } from '../support/server'

/**
 * A name in `server.allowed_hosts` is answered in `Host` at any port, but a page at that name is
 * Burnrate's own only at the port Burnrate is opened at: the port it listens on (http://), 443 for
 * the TLS proxy in front of it (https://), `server.public_url`, or a `name:port` entry. Another web
 * app on the team server's name at another port is another origin: it was answered as Burnrate's
 * own page, its requests carrying the dashboard's SameSite=Strict session (a browser sends it to
 * every port of the same site), and a WebSocket or a simple request from it reached the proxy.
 */
const TOKEN = 'origin-port-token-0123456789abcdef'
const NAME = 'burnrate.team.example'

/** A dashboard read with a session, as a browser sends it from a page at `origin`. */
function fromPage(s: TestServer, cookie: string, origin: string, host: string): Promise<Reply> {
  return request(`${s.url}/api/dashboard/summary`, { headers: { host, origin, cookie, 'sec-fetch-site': 'same-site' } })
}

async function session(s: TestServer): Promise<string> {
  const res = await request(`${s.url}/login`, {
    method: 'POST',
    headers: { origin: s.url, 'sec-fetch-site': 'same-origin', 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ token: TOKEN }).toString(),
  })
  expect(res.status).toBe(303)
  return String(res.headers['set-cookie']).split(';')[0]
}

describe('a name listed alone in server.allowed_hosts', () => {
  let s: TestServer
  let port: number
  let cookie: string
  beforeAll(async () => {
    s = await startTestServer({ server: { allowed_hosts: [NAME] }, dashboard: { token: TOKEN } })
    port = Number(new URL(s.url).port)
    cookie = await session(s)
  })
  afterAll(async () => {
    await s.cleanup()
  })

  it("is not Burnrate's page at another port of that name: 403", async () => {
    for (const origin of [`http://${NAME}:3000`, `http://${NAME}`, `https://${NAME}:8443`, `http://${NAME}:${port + 1}`]) {
      const res = await fromPage(s, cookie, origin, `${NAME}:${port}`)
      expect(res.status, origin).toBe(403)
      expect(res.json().error.type).toBe('forbidden')
      expect(res.json().error.message, origin).toContain(origin)
    }
    // What to set, if it is Burnrate's own page through a reverse proxy.
    const err = (await fromPage(s, cookie, `http://${NAME}:3000`, `${NAME}:${port}`)).json().error
    expect(err.message).toContain(`server.public_url: http://${NAME}:3000`)
    expect(err.message).toContain(`add ${NAME}:3000 to server.allowed_hosts`)
    expect((await fromPage(s, cookie, 'http://evil.example', `${NAME}:${port}`)).json().error.message).not.toContain('public_url')
  })

  it('is still its page opened straight at the port it listens on, and through a TLS proxy on 443', async () => {
    expect((await fromPage(s, cookie, `http://${NAME}:${port}`, `${NAME}:${port}`)).status).toBe(200)
    // The documented team server: nginx on 443 passing the browser's Host on.
    expect((await fromPage(s, cookie, `https://${NAME}`, NAME)).status).toBe(200)
    expect((await fromPage(s, cookie, `https://${NAME}:443`, NAME)).status).toBe(200)
    // ...and one that passes Burnrate its own address instead.
    expect((await fromPage(s, cookie, `https://${NAME}`, `127.0.0.1:${port}`)).status).toBe(200)
  })
})

describe('the other ways to name the page', () => {
  let s: TestServer
  let cookie: string
  beforeAll(async () => {
    s = await startTestServer({
      server: { allowed_hosts: [NAME, 'gw.team.example:9000'], public_url: `https://${NAME}:8443` },
      dashboard: { token: TOKEN },
    })
    cookie = await session(s)
  })
  afterAll(async () => {
    await s.cleanup()
  })

  it('server.public_url names its origin, a name:port entry its port (http:// or https://)', async () => {
    expect((await fromPage(s, cookie, `https://${NAME}:8443`, NAME)).status).toBe(200)
    expect((await fromPage(s, cookie, 'http://gw.team.example:9000', 'gw.team.example:9000')).status).toBe(200)
    expect((await fromPage(s, cookie, 'https://gw.team.example:9000', 'gw.team.example:9000')).status).toBe(200)
    expect((await fromPage(s, cookie, 'http://gw.team.example:9001', 'gw.team.example:9000')).status).toBe(403)
    expect((await fromPage(s, cookie, `https://${NAME}:9443`, NAME)).status).toBe(403)
  })
})
