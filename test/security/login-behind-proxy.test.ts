import http from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Browser } from 'playwright'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { NO_BROWSER, launchChromium } from '../e2e/browser'
import { type Reply, request } from '../support/http'
import { type TestServer, startTestServer } from '../support/server'

/**
 * A reverse proxy in front of a team server that passes Burnrate its own address in `Host`
 * (nginx's `proxy_pass` without `proxy_set_header Host $host`): the login form's `Origin` is the
 * address the browser opened, not that `Host`, and `POST /login` refuses it (against login CSRF).
 * The 403 says why and what to do, in the contract's error shape and on the login page, and
 * `server.public_url` names the address browsers use, whose page may then log in.
 */
const TOKEN = 'login-behind-proxy-token-0123456789'
const FRONT = 'https://burnrate.team.example'

function postLogin(s: TestServer, headers: Record<string, string>): Promise<Reply> {
  const port = new URL(s.url).port
  return request(`${s.url}/login`, {
    method: 'POST',
    // As the proxy forwards the browser's form: Host rewritten to Burnrate's own address.
    headers: { host: `127.0.0.1:${port}`, 'x-forwarded-proto': 'https', 'content-type': 'application/x-www-form-urlencoded', ...headers },
    body: new URLSearchParams({ token: TOKEN }).toString(),
  })
}

describe('POST /login behind a reverse proxy that rewrites Host', () => {
  let s: TestServer
  beforeAll(async () => {
    s = await startTestServer({ server: { allowed_hosts: ['burnrate.team.example'] }, dashboard: { token: TOKEN } })
  })
  afterAll(async () => {
    await s.cleanup()
  })

  it('is refused with a 403 that says why: the Origin is not the Host, and what to set', async () => {
    const res = await postLogin(s, { origin: FRONT, 'sec-fetch-site': 'same-origin', accept: 'application/json' })
    expect(res.status).toBe(403)
    expect(res.headers['set-cookie']).toBeUndefined()
    const err = res.json().error
    expect(err.type).toBe('forbidden')
    expect(err.message).toContain(FRONT)
    expect(err.message).toContain(`127.0.0.1:${new URL(s.url).port}`)
    expect(err.message).toContain('server.public_url')
    expect(err.message).toContain('proxy_set_header Host')
  })

  it("a browser's form gets the login page, saying the same (still a 403)", async () => {
    const res = await postLogin(s, { origin: FRONT, 'sec-fetch-site': 'same-origin', accept: 'text/html' })
    expect(res.status).toBe(403)
    expect(res.headers['content-type']).toMatch(/^text\/html/)
    expect(res.text).toMatch(/<form method="post" action="\/login"/)
    expect(res.text).toMatch(/role="alert">[^<]*server\.public_url/)
  })

  it('a login with no Origin is told that, not sent to set public_url', async () => {
    const res = await postLogin(s, { accept: 'application/json' })
    expect(res.status).toBe(403)
    expect(res.json().error.type).toBe('forbidden')
    expect(res.json().error.message).not.toContain('public_url')
  })
})

describe('server.public_url', () => {
  let s: TestServer
  beforeAll(async () => {
    s = await startTestServer({ server: { public_url: `${FRONT}/`, allowed_hosts: ['burnrate.team.example'] }, dashboard: { token: TOKEN } })
  })
  afterAll(async () => {
    await s.cleanup()
  })

  it("lets the login page at that address log in, whatever Host the proxy passes", async () => {
    const res = await postLogin(s, { origin: FRONT, 'sec-fetch-site': 'same-origin' })
    expect(res.status).toBe(303)
    expect(String(res.headers['set-cookie'])).toMatch(/; Secure$/)
  })

  it('lets no other page in (another port of that name, another site, a cross-site form)', async () => {
    for (const h of [
      { origin: `${FRONT}:8443`, 'sec-fetch-site': 'same-origin' },
      { origin: 'https://evil.example', 'sec-fetch-site': 'same-origin' },
      { origin: FRONT, 'sec-fetch-site': 'cross-site' },
      { origin: 'null', 'sec-fetch-site': 'same-origin' },
    ] as Record<string, string>[]) {
      const res = await postLogin(s, h)
      expect(res.status, JSON.stringify(h)).toBe(403)
      expect(res.headers['set-cookie']).toBeUndefined()
    }
  })
})

describe.skipIf(NO_BROWSER)('in Chromium, through a real proxy that rewrites Host', () => {
  let upstreamPort = 0
  const front = http.createServer((req, res) => {
    const out = http.request({ host: '127.0.0.1', port: upstreamPort, method: req.method, path: req.url, headers: { ...req.headers, host: `127.0.0.1:${upstreamPort}` } }, (up) => {
      res.writeHead(up.statusCode ?? 502, up.headers)
      up.pipe(res)
    })
    out.on('error', () => res.destroy())
    req.pipe(out)
  })
  let frontUrl = ''
  let browser: Browser | null = null
  beforeAll(async () => {
    await new Promise<void>((r) => front.listen(0, '127.0.0.1', r))
    // (Chromium takes every *.localhost name for this machine.)
    frontUrl = `http://burnrate-front.localhost:${(front.address() as AddressInfo).port}`
    browser = await launchChromium()
  })
  afterAll(async () => {
    await browser?.close()
    front.close()
  })

  async function typedLogin(s: TestServer): Promise<import('playwright').Page> {
    upstreamPort = Number(new URL(s.url).port)
    const page = await (await browser!.newContext()).newPage()
    await page.goto(`${frontUrl}/login`)
    await page.fill('#token', TOKEN)
    await Promise.all([page.waitForEvent('load'), page.click('button[type=submit]')])
    return page
  }

  it('without public_url: the login page says why the login is refused', async () => {
    const s = await startTestServer({ server: { allowed_hosts: ['burnrate-front.localhost'] }, dashboard: { token: TOKEN } })
    try {
      const page = await typedLogin(s)
      expect(await page.getByRole('alert').textContent()).toContain('server.public_url')
    } finally {
      await s.cleanup()
    }
  }, 60_000)

  it('with public_url: the login goes through and the dashboard API answers', async () => {
    const s = await startTestServer({ server: { public_url: frontUrl, allowed_hosts: ['burnrate-front.localhost'] }, dashboard: { token: TOKEN } })
    try {
      const page = await typedLogin(s)
      expect(new URL(page.url()).pathname).toBe('/')
      expect(await page.evaluate(async () => (await fetch('/api/dashboard/summary')).status)).toBe(200)
    } finally {
      await s.cleanup()
    }
  }, 60_000)
})
