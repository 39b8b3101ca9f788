import { createHash } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { request } from '../support/http'
import { type TestServer, startTestServer } from '../support/server'

/**
 * The dashboard login: a random session per login in a cookie named for the port, the login
 * URL redirected away at once and only to a local path, and guessing that never locks the
 * owner out nor gets fresh chances from another 127.0.0.x address.
 */
const TOKEN = 'dash-session-token-0123456789'
let s: TestServer
let port: number

beforeAll(async () => {
  s = await startTestServer({ dashboard: { token: TOKEN } })
  port = Number(new URL(s.url).port)
})
afterAll(async () => {
  await s.cleanup()
})

function cookiePair(res: Awaited<ReturnType<typeof request>>): string {
  return String(res.headers['set-cookie']).split(';')[0]
}

describe('the dashboard session cookie', () => {
  it('is a fresh random value at each login, named for the port, HttpOnly and SameSite=Strict, never a hash of the token', async () => {
    const a = await request(`${s.url}/?token=${TOKEN}`)
    const b = await request(`${s.url}/?token=${TOKEN}`)
    expect(a.status).toBe(303)
    const cookie = String(a.headers['set-cookie'])
    expect(cookie).toMatch(new RegExp(`^burnrate_dashboard_${port}=`))
    expect(cookie).toMatch(/; HttpOnly/)
    expect(cookie).toMatch(/; SameSite=Strict/)
    const [va, vb] = [cookiePair(a).split('=')[1], cookiePair(b).split('=')[1]]
    expect(va).not.toBe(vb)
    expect(va.length).toBeGreaterThanOrEqual(43)
    const offline = createHash('sha256').update(`burnrate-dashboard:${TOKEN}`).digest('hex')
    expect(va).not.toBe(offline)
    // The value computable offline (the old cookie) opens nothing, under either name.
    for (const c of [`burnrate_dashboard=${offline}`, `burnrate_dashboard_${port}=${offline}`]) {
      expect((await request(`${s.url}/api/dashboard/summary`, { headers: { cookie: c } })).status).toBe(401)
    }
    // Both sessions work; a session under another port's name does not.
    for (const p of [cookiePair(a), cookiePair(b)]) {
      expect((await request(`${s.url}/api/dashboard/summary`, { headers: { cookie: p } })).status).toBe(200)
    }
    expect((await request(`${s.url}/api/dashboard/summary`, { headers: { cookie: `burnrate_dashboard_${port + 1}=${va}` } })).status).toBe(401)
  })

  it('the login URL is redirected away even when the browser already has a session', async () => {
    const first = await request(`${s.url}/?token=${TOKEN}`)
    const again = await request(`${s.url}/?token=${TOKEN}&range=7d`, { headers: { cookie: cookiePair(first) } })
    expect(again.status).toBe(303)
    expect(again.headers.location).toBe('/?range=7d')
  })

  it('redirects only to local paths: //evil.example/ and /\\evil.example stay on this server', async () => {
    for (const path of ['//evil.example/', '///evil.example/', '/\\evil.example/', '/%2F/evil.example/']) {
      const res = await request(`${s.url}${path}?token=${TOKEN}`)
      expect(res.status, path).toBe(303)
      const loc = String(res.headers.location)
      expect(loc, path).toMatch(/^\/(?![/\\])/)
      expect(new URL(loc, s.url).host, path).toBe(new URL(s.url).host)
    }
  })
})

describe('guessing tokens', () => {
  it('every loopback address is one client: rotating through 127.0.0.x gives no fresh guesses', async () => {
    const server = await startTestServer({ dashboard: { token: TOKEN } })
    try {
      let refused = false
      for (let i = 0; i < 12 && !refused; i++) {
        const r = await request(`${server.url}/api/dashboard/summary`, {
          headers: { authorization: `Bearer wrong-guess-${i}` },
          localAddress: `127.0.0.${2 + i}`,
        })
        expect(r.status).toBe(401)
        refused = /too many/i.test(r.json().error.message)
      }
      expect(refused).toBe(true)
      const ok = await request(`${server.url}/api/dashboard/summary`, { headers: { authorization: `Bearer ${TOKEN}` }, localAddress: '127.0.0.9' })
      expect(ok.status).toBe(200)
    } finally {
      await server.cleanup()
    }
  })

  it('the admin token: a flood of wrong ones waits in line while the right one gets in at once', async () => {
    const ADMIN = 'admin-token-flood-0123456789'
    const server = await startTestServer({ admin: { enabled: true, token: ADMIN } })
    const attempt = (token: string, localAddress = '127.0.0.1') =>
      request(`${server.url}/api/admin/providers`, { headers: { authorization: `Bearer ${token}` }, localAddress })
    try {
      // Five free wrong ones from other loopback addresses count against the same client.
      for (let i = 0; i < 5; i++) expect((await attempt(`wrong-${i}`, `127.0.0.${20 + i}`)).status).toBe(401)
      let wrongAnswered = 0
      const flood = Array.from({ length: 12 }, (_, i) =>
        attempt(`flood-${i}`, `127.0.1.${i + 1}`).then((r) => {
          wrongAnswered++
          return r
        }),
      )
      const right = await attempt(ADMIN)
      expect(right.status).toBe(200)
      // It did not wait behind the flood, which is still waiting its turn.
      expect(wrongAnswered).toBeLessThan(12)
      const replies = await Promise.all(flood)
      for (const r of replies) expect(r.status).toBe(401)
    } finally {
      await server.cleanup()
    }
  }, 60_000)
})
