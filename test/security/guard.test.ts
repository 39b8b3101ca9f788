import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { ConfigError } from '../../src/main/config/load'
import { configSchema } from '../../src/main/config/schema'
import { createLogger } from '../../src/main/log'
import { createBurnrate } from '../../src/main/server/server'
import { fixture } from '../support/fixtures'
import { type Reply, request } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'

let upstream: MockUpstream
let t: TestServer
let port: number

beforeAll(async () => {
  upstream = await startMockUpstream(() => ({
    status: 200,
    headers: { 'content-type': 'application/json' },
    body: fixture('openai-chat/chat-nonstream-cached.json'),
  }))
  t = await startTestServer({}, upstream.url)
  port = Number(new URL(t.url).port)
})
afterAll(async () => {
  await t.cleanup()
  await upstream.close()
})
beforeEach(() => {
  upstream.requests.length = 0
  // Calls of earlier tests are on disk before this one counts.
  t.server.ledger.flush()
})

const CHAT = JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] })

function chat(headers: Record<string, string>, base = t.url): Promise<Reply> {
  return request(`${base}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer sk-guard-test-00000001', ...headers },
    body: CHAT,
  })
}

function expectForbidden(res: Reply): void {
  expect(res.status).toBe(403)
  expect(res.headers['content-type']).toMatch(/application\/json/)
  expect(res.json().error.type).toBe('forbidden')
  expect(res.json().error.message.length).toBeGreaterThan(10)
  expect(Object.keys(res.headers).filter((h) => h.startsWith('access-control-'))).toEqual([])
}

function callCount(file = t.dbFile): number {
  const db = new Database(file, { readonly: true })
  try {
    return (db.prepare('SELECT count(*) AS n FROM calls').get() as { n: number }).n
  } finally {
    db.close()
  }
}

describe('DNS rebinding: only this server\'s own names are answered', () => {
  const ROUTES = ['/api/health', '/', '/api/dashboard/summary', '/api/admin/budgets/rules', '/index.html']

  it('refuses a foreign Host on every kind of route, and sends nothing upstream', async () => {
    for (const host of [`evil.example:${port}`, `127.0.0.1.evil.example:${port}`, `localhost.:${port}`, 'evil.example']) {
      expectForbidden(await chat({ host }))
      for (const path of ROUTES) expectForbidden(await request(t.url + path, { headers: { host } }))
    }
    expect(upstream.requests).toHaveLength(0)
  })

  it('refuses the right name on another port (a port-forwarded page)', async () => {
    expectForbidden(await request(`${t.url}/api/health`, { headers: { host: `127.0.0.1:${port + 1}` } }))
  })

  it('answers localhost and loopback IPs on its port', async () => {
    for (const host of [`localhost:${port}`, `127.0.0.1:${port}`, `127.9.9.9:${port}`, `[::1]:${port}`]) {
      const res = await request(`${t.url}/api/health`, { headers: { host } })
      expect(res.status, host).toBe(200)
    }
    const res = await chat({ host: `localhost:${port}` })
    expect(res.status).toBe(200)
    expect(upstream.requests).toHaveLength(1)
  })
})

describe('cross-site requests from a browser', () => {
  it('refuses a proxied call sent by another web page, before anything goes upstream', async () => {
    const before = callCount()
    expectForbidden(await chat({ origin: 'http://evil.example' }))
    expectForbidden(await chat({ origin: 'null' }))
    expectForbidden(await chat({ origin: `http://localhost:${port + 1}` }))
    // A simple (no-preflight) request: text/plain, no custom headers, no Origin in some browsers.
    expectForbidden(await chat({ 'content-type': 'text/plain', 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'no-cors' }))
    expectForbidden(await chat({ 'sec-fetch-site': 'same-site', 'sec-fetch-mode': 'cors' }))
    expect(upstream.requests).toHaveLength(0)
    expect(callCount()).toBe(before)
  })

  it('refuses another page reading the dashboard API or calling the admin API', async () => {
    for (const path of ['/api/dashboard/summary', '/api/dashboard/export?format=csv', '/api/health', '/api/admin/api-keys']) {
      expectForbidden(await request(t.url + path, { headers: { origin: 'http://evil.example' } }))
      expectForbidden(await request(t.url + path, { headers: { 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'cors' } }))
      expectForbidden(await request(t.url + path, { headers: { 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'navigate' } }))
    }
    const post = await request(`${t.url}/api/admin/budgets/rules`, {
      method: 'POST',
      headers: { origin: 'http://evil.example', 'content-type': 'text/plain' },
      body: '{"api_key_pattern":"*","daily_limit_usd":0,"action":"block"}',
    })
    expectForbidden(post)
    // A CORS preflight gets no permission either.
    const pre = await request(`${t.url}/api/admin/budgets/rules`, {
      method: 'OPTIONS',
      headers: { origin: 'http://evil.example', 'access-control-request-method': 'POST' },
    })
    expectForbidden(pre)
  })

  it('checks the path as the router sees it: case, doubled slashes and percent-encoding do not slip an API read past the check', async () => {
    for (const path of ['/API/dashboard/summary', '/Api/dashboard/export?format=csv', '//api/dashboard/summary', '/%61pi/dashboard/summary', '/api']) {
      expectForbidden(await request(t.url + path, { headers: { 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'navigate' } }))
    }
    // The router really serves the case variant (which is why the check must see it as the API).
    expect((await request(`${t.url}/API/dashboard/summary`)).status).toBe(200)
  })

  it('lets the dashboard page itself call /api (same origin), and a link open the page', async () => {
    const same = await request(`${t.url}/api/health`, {
      headers: { origin: `http://127.0.0.1:${port}`, 'sec-fetch-site': 'same-origin', 'sec-fetch-mode': 'cors' },
    })
    expect(same.status).toBe(200)
    const typed = await request(`${t.url}/api/health`, { headers: { 'sec-fetch-site': 'none', 'sec-fetch-mode': 'navigate' } })
    expect(typed.status).toBe(200)
    const link = await request(`${t.url}/`, { headers: { 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'navigate' } })
    expect(link.status).not.toBe(403)
  })

  it('never sends CORS headers', async () => {
    for (const path of ['/api/health', '/', '/api/dashboard/summary', '/nothing']) {
      const res = await request(t.url + path, { headers: { origin: `http://127.0.0.1:${port}` } })
      expect(Object.keys(res.headers).filter((h) => h.startsWith('access-control-')), path).toEqual([])
    }
  })
})

describe('server.allowed_hosts and server.allowed_origins', () => {
  it('extends the names and origins that are answered', async () => {
    const s = await startTestServer(
      { server: { allowed_hosts: ['burnrate.internal'], allowed_origins: ['http://localhost:5173'] } },
      upstream.url,
    )
    try {
      expect((await request(`${s.url}/api/health`, { headers: { host: 'burnrate.internal:9999' } })).status).toBe(200)
      expect((await chat({ origin: 'http://localhost:5173', 'sec-fetch-site': 'same-site' }, s.url)).status).toBe(200)
      expectForbidden(await chat({ origin: 'http://localhost:5174' }, s.url))
    } finally {
      await s.cleanup()
    }
  })
})

describe('behind an HTTPS reverse proxy', () => {
  it('answers its own dashboard at https://<a name in server.allowed_hosts>, and no other https page', async () => {
    // The team setup: a TLS proxy at https://burnrate.team.example forwards Host. The dashboard's
    // own writes (a budget rule, a price) carry Origin: https://burnrate.team.example.
    const admin = 'admin-token-guard-0123456789abcdef'
    const s = await startTestServer(
      { server: { allowed_hosts: ['burnrate.team.example', 'ops.example:8443'] }, admin: { enabled: true, token: admin } },
      upstream.url,
    )
    try {
      let n = 0
      const rule = (origin: string, host: string): Promise<Reply> =>
        request(`${s.url}/api/admin/budgets/rules`, {
          method: 'POST',
          headers: { host, origin, authorization: `Bearer ${admin}`, 'content-type': 'application/json', 'sec-fetch-site': 'same-origin' },
          body: JSON.stringify({ api_key_pattern: `sk-team-${++n}-*`, daily_limit_usd: 5, action: 'block' }),
        })
      expect((await rule('https://burnrate.team.example', 'burnrate.team.example')).status).toBe(201)
      expect((await rule('https://ops.example:8443', 'ops.example:8443')).status).toBe(201)
      expectForbidden(await rule('https://ops.example', 'ops.example:8443'))
      expectForbidden(await rule('https://evil.example', 'burnrate.team.example'))
      expectForbidden(await rule('https://burnrate.team.example.evil.example', 'burnrate.team.example'))
      // Loopback over https is not this server (it serves plain HTTP): some other local program.
      expectForbidden(await chat({ origin: `https://127.0.0.1:${new URL(s.url).port}` }, s.url))
    } finally {
      await s.cleanup()
    }
  })
})

describe('dashboard.token', () => {
  let s: TestServer
  let renderer: string
  const PAGE = '<!doctype html><title>burnrate-dashboard-page</title>'
  beforeAll(async () => {
    // A built page of the test's own, so whether the page is served is plain to see.
    renderer = mkdtempSync(join(tmpdir(), 'burnrate-guard-ui-'))
    mkdirSync(join(renderer, 'assets'))
    writeFileSync(join(renderer, 'index.html'), PAGE)
    process.env.BURNRATE_RENDERER_DIR = renderer
    s = await startTestServer({ dashboard: { token: 'dash-token-123456' } }, upstream.url)
  })
  afterAll(async () => {
    delete process.env.BURNRATE_RENDERER_DIR
    await s.cleanup()
    rmSync(renderer, { recursive: true, force: true })
  })

  it('guards the page and the dashboard API, not the proxy or the health probe', async () => {
    for (const path of ['/', '/api/dashboard/summary', '/assets/x.js']) {
      const res = await request(s.url + path)
      expect(res.status, path).toBe(401)
      expect(res.json().error.type).toBe('unauthorized')
      expect(res.headers['www-authenticate']).toMatch(/^Bearer/)
      const wrong = await request(s.url + path, { headers: { authorization: 'Bearer dash-token-123457' } })
      expect(wrong.status).toBe(401)
    }
    expect((await request(`${s.url}/api/health`)).status).toBe(200)
    expect((await chat({}, s.url)).status).toBe(200)
    const ok = await request(`${s.url}/api/dashboard/summary`, { headers: { authorization: 'Bearer dash-token-123456' } })
    expect(ok.status).not.toBe(401)
  })

  it('guards the page however its path is spelt: an encoded /api/admin, /api/health or /api/ingest is the page, not a route with its own token', async () => {
    for (const path of ['/%61pi/admin/x', '/%61pi/health', '/%61pi/ingest', '/api%2Fadmin/calls', '/API%2fhealth']) {
      const res = await request(s.url + path, { headers: { accept: 'text/html' } })
      expect({ path, status: res.status, page: res.text.includes(PAGE) }).toEqual({ path, status: 401, page: false })
      // The router does serve the page there, which is why the token is needed.
      const ok = await request(s.url + path, { headers: { accept: 'text/html', authorization: 'Bearer dash-token-123456' } })
      expect({ path, page: ok.text.includes(PAGE) }).toEqual({ path, page: true })
    }
    // Routes with their own auth still skip the dashboard token in any case, as the router matches them.
    expect((await request(`${s.url}/API/Health`)).status).toBe(200)
  })

  it('never serves the page for an upper-case /API/… that skips the token (admin API, team ingest): the API answers it, as it does the lower-case path', async () => {
    for (const [path, lower] of [['/API/admin/x', '/api/admin/x'], ['/Api/Admin/nothing-here', '/api/admin/nothing-here'], ['/API/ingest', '/api/ingest']]) {
      const res = await request(s.url + path, { headers: { accept: 'text/html' } })
      const same = await request(s.url + lower, { headers: { accept: 'text/html' } })
      const answer = (r: Reply) => (r.text.includes(PAGE) ? 'the page' : r.json().error.type)
      expect({ path, status: res.status, answer: answer(res) }).toEqual({ path, status: same.status, answer: answer(same) })
      expect(res.status).not.toBe(200)
    }
  })

  it('slows down guessing, yet the right token always gets in at once, even while wrong ones are refused', async () => {
    let tooMany: Awaited<ReturnType<typeof request>> | null = null
    for (let i = 0; i < 60 && !tooMany; i++) {
      const r = await request(`${s.url}/api/dashboard/summary`, { headers: { authorization: `Bearer guess-${i}` } })
      expect(r.status).toBe(401)
      if (/too many/i.test(r.json().error.message)) tooMany = r
    }
    expect(tooMany).not.toBeNull()
    expect(Number(tooMany!.headers['retry-after'])).toBeGreaterThanOrEqual(1)
    // No waiting: the owner is never locked out by someone else's guesses.
    const ok = await request(`${s.url}/api/dashboard/summary`, { headers: { authorization: 'Bearer dash-token-123456' } })
    expect(ok.status).toBe(200)
    const login = await request(`${s.url}/?token=dash-token-123456`)
    expect(login.status).toBe(303)
  })

  it('opening /?token= once sets an HttpOnly, SameSite=Strict cookie and redirects to a URL without the token', async () => {
    const bad = await request(`${s.url}/?token=nope`)
    expect(bad.status).toBe(401)
    const res = await request(`${s.url}/?token=dash-token-123456&tab=costs`)
    expect(res.status).toBe(303)
    expect(res.headers.location).toBe('/?tab=costs')
    const cookie = String(res.headers['set-cookie'])
    expect(cookie).toMatch(/HttpOnly/)
    expect(cookie).toMatch(/SameSite=Strict/)
    expect(cookie).not.toContain('dash-token-123456')
    const pair = cookie.split(';')[0]
    const page = await request(`${s.url}/api/dashboard/summary`, { headers: { cookie: pair } })
    expect(page.status).not.toBe(401)
    expect((await request(`${s.url}/api/dashboard/summary`, { headers: { cookie: `${pair}x` } })).status).toBe(401)
  })
})

describe('listen address', () => {
  function config(host: string, token?: string) {
    const parsed = configSchema.parse({ server: { host, port: 0 }, dashboard: token ? { token } : {} })
    return { ...parsed, data_dir: t.dir + '/exposure-' + host.replace(/\W/g, ''), timezone: 'UTC', source: null }
  }

  it('refuses to start on an address other machines reach when the dashboard has no token', () => {
    expect(() => createBurnrate(config('0.0.0.0'))).toThrow(ConfigError)
    expect(() => createBurnrate(config('0.0.0.0'))).toThrow(/dashboard\.token/)
  })

  it('starts there with a token, warns, and requires the token for the dashboard', async () => {
    const lines: string[] = []
    const server = createBurnrate(config('0.0.0.0', 'lan-token-abcdef'), { log: createLogger('info', (l) => lines.push(l)) })
    try {
      const url = await server.listen()
      const p = new URL(url).port
      expect(lines.join('')).toMatch(/warn .*0\.0\.0\.0.*reachable from other machines/)
      expect(lines.join('')).not.toContain('lan-token-abcdef')
      const res = await request(`http://127.0.0.1:${p}/api/dashboard/summary`)
      expect(res.status).toBe(401)
      const ok = await request(`http://127.0.0.1:${p}/api/health`, { headers: { host: `0.0.0.0:${p}` } })
      expect(ok.status).toBe(200)
    } finally {
      await server.close(0)
    }
  })

  it('binds to 127.0.0.1 by default', async () => {
    const { loadConfig } = await import('../../src/main/config/load')
    const cfg = loadConfig({ dataDir: t.dir + '/defaults' }, {})
    expect(cfg.server.host).toBe('127.0.0.1')
    const server = createBurnrate({ ...cfg, server: { ...cfg.server, port: 0 } }, { log: createLogger('info', () => {}) })
    try {
      await server.listen()
      expect((server.http.address() as { address: string }).address).toBe('127.0.0.1')
    } finally {
      await server.close(0)
    }
  })

  it('starts quietly on loopback', async () => {
    const lines: string[] = []
    const server = createBurnrate(config('127.0.0.1'), { log: createLogger('info', (l) => lines.push(l)) })
    await server.close(0)
    expect(lines.join('')).not.toMatch(/warn/)
  })
})
