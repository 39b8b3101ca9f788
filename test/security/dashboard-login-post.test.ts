import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Reply, request } from '../support/http'
import { type TestServer, startTestServer } from '../support/server'

/**
 * Logging in to the dashboard without the token (or a login code) in an address: `/?token=` puts
 * it in a reverse proxy's access log, the browser's history and a Referer. The login page's form
 * posts it to `/login`, answered with the session cookie and a 303 to the dashboard; only a
 * same-origin post is taken (no other site can log a browser in to a session of its choosing).
 */
const TOKEN = 'dash-login-post-token-0123456789'
let s: TestServer
/** The server's own origin, as a browser sends it with the login page's form. */
let origin: string

beforeAll(async () => {
  s = await startTestServer({ dashboard: { token: TOKEN } })
  origin = s.url
})
afterAll(async () => {
  await s.cleanup()
})

const cookieOf = (res: Reply): string => String(res.headers['set-cookie']).split(';')[0]
const summary = (cookie: string) => request(`${s.url}/api/dashboard/summary`, { headers: { cookie } })

function postLogin(fields: Record<string, string>, headers: Record<string, string> = { origin: s.url, 'sec-fetch-site': 'same-origin' }): Promise<Reply> {
  return request(`${s.url}/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'text/html', ...headers },
    body: new URLSearchParams(fields).toString(),
  })
}

describe('the login page', () => {
  it('is a form that posts the token to /login, under a strict policy', async () => {
    const page = await request(`${s.url}/login`, { headers: { accept: 'text/html' } })
    expect(page.status).toBe(200)
    expect(page.headers['content-type']).toMatch(/^text\/html/)
    expect(page.text).toMatch(/<form method="post" action="\/login"/)
    expect(page.text).toMatch(/name="token" type="password"/)
    // (With no-referrer a browser sends the form with Origin: null, which is refused.)
    expect(page.headers['referrer-policy']).toBe('same-origin')
    expect(page.headers['cache-control']).toBe('no-store')
    const csp = String(page.headers['content-security-policy'])
    expect(csp).toContain("default-src 'none'")
    expect(csp).toContain("form-action 'self'")
    expect(csp).toContain("frame-ancestors 'none'")
    expect(csp).not.toContain('unsafe-inline')
  })

  it('is what a browser gets at the dashboard without a session (still a 401), and an API client the JSON error', async () => {
    const page = await request(`${s.url}/`, { headers: { accept: 'text/html' } })
    expect(page.status).toBe(401)
    expect(page.text).toMatch(/<form method="post" action="\/login"/)
    const api = await request(`${s.url}/api/dashboard/summary`, { headers: { accept: 'text/html' } })
    expect(api.status).toBe(401)
    expect(api.json().error.type).toBe('unauthorized')
    expect(api.json().error.message).toContain('/login')
  })
})

describe('POST /login', () => {
  it('with the token: the session cookie and a 303 to the dashboard, nothing to keep or pass on', async () => {
    const res = await postLogin({ token: TOKEN })
    expect(res.status).toBe(303)
    expect(res.headers.location).toBe('/')
    expect(String(res.headers['set-cookie'])).toMatch(new RegExp(`^burnrate_dashboard_${new URL(s.url).port}=[A-Za-z0-9_-]{43}; Path=/; HttpOnly; SameSite=Strict$`))
    expect(res.headers['cache-control']).toBe('no-store')
    expect(res.headers['referrer-policy']).toBe('no-referrer')
    expect((await summary(cookieOf(res))).status).toBe(200)
  })

  it("with the desktop's one-time code, which is in the address's fragment only (never sent in a request line) and works once", async () => {
    const link = new URL(s.server.dashboardLoginUrl())
    expect(link.origin).toBe(s.url)
    expect(link.pathname).toBe('/login')
    expect(link.search).toBe('')
    expect(link.href).not.toContain(TOKEN)
    const code = new URLSearchParams(link.hash.slice(1)).get('login')!
    expect(code).toMatch(/^[A-Za-z0-9_-]{43}$/)
    const first = await postLogin({ login: code })
    expect(first.status).toBe(303)
    expect((await summary(cookieOf(first))).status).toBe(200)
    const again = await postLogin({ login: code })
    expect(again.status).toBe(401)
    expect(again.headers['set-cookie']).toBeUndefined()
  })

  it('a wrong token: 401, no cookie, the form again saying so', async () => {
    const res = await postLogin({ token: `${TOKEN}x` })
    expect(res.status).toBe(401)
    expect(res.headers['set-cookie']).toBeUndefined()
    expect(res.text).toMatch(/<form method="post" action="\/login"/)
    expect(res.text).toMatch(/not the dashboard token/)
    // An API client (no text/html) gets the contract's error.
    const json = await postLogin({ token: 'nope' }, { origin: s.url, accept: 'application/json' })
    expect(json.status).toBe(401)
    expect(json.json().error.type).toBe('unauthorized')
  })

  for (const [what, headers] of [
    ['from another site', { origin: 'http://evil.example' }],
    ['from another port of this host', { origin: 'http://127.0.0.1:1' }],
    ['from a file:// page or a sandboxed frame (Origin: null)', { origin: 'null' }],
    ['without an Origin (no browser sends a form so)', {}],
    ['said by the browser to be cross-site', { origin: 'http://placeholder', 'sec-fetch-site': 'cross-site' }],
  ] as const) {
    it(`is refused ${what}, even with the right token`, async () => {
      const h: Record<string, string> = { ...headers }
      if (h.origin === 'http://placeholder') h.origin = origin
      const res = await postLogin({ token: TOKEN }, h)
      expect(res.status).toBe(403)
      expect(res.headers['set-cookie']).toBeUndefined()
    })
  }

  it('reads a form of 8 KB at most, and takes whatever else it is sent as a wrong token', async () => {
    const big = await postLogin({ token: 'x'.repeat(20_000) })
    expect(big.status).toBe(413)
    expect(big.headers['set-cookie']).toBeUndefined()
    const odd = await request(`${s.url}/login`, {
      method: 'POST',
      headers: { origin: s.url, 'content-type': 'application/x-www-form-urlencoded; charset=utf-8' },
      body: '%E0%A4%A=&&token&login=%ZZ',
    })
    expect(odd.status).toBe(401)
    expect(odd.json().error.type).toBe('unauthorized')
    // The right token still gets in after them.
    expect((await postLogin({ token: TOKEN })).status).toBe(303)
  })

  it('takes a form only', async () => {
    const res = await request(`${s.url}/login`, { method: 'POST', headers: { origin: s.url, 'content-type': 'application/json' }, body: JSON.stringify({ token: TOKEN }) })
    expect(res.status).toBe(415)
    expect(res.headers['set-cookie']).toBeUndefined()
  })
})

describe('/?token= (old bookmarks)', () => {
  it('still logs in, redirected at once to the address without it, and tells the browser to send no Referer', async () => {
    const res = await request(`${s.url}/?range=7d&token=${TOKEN}`)
    expect(res.status).toBe(303)
    expect(res.headers.location).toBe('/?range=7d')
    expect(res.headers['referrer-policy']).toBe('no-referrer')
    expect(res.headers['cache-control']).toBe('no-store')
    expect((await summary(cookieOf(res))).status).toBe(200)
  })

  it('leaves a login code sent beside it out of the address it redirects to (a code is never kept in one)', async () => {
    const res = await request(`${s.url}/?range=7d&login=${'A'.repeat(43)}&token=${TOKEN}`)
    expect(res.status).toBe(303)
    expect(res.headers.location).toBe('/?range=7d')
  })
})
