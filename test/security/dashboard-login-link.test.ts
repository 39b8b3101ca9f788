import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { DashboardSessions, LOGIN_CODE_MS } from '../../src/main/security/sessions'
import { loginFromLink } from '../support/dashboard-login'
import { request } from '../support/http'
import { type TestServer, startTestServer } from '../support/server'

/**
 * The address the desktop app opens the dashboard at in the browser goes on a command line (the
 * browser's, `xdg-open`'s), which every user of the machine can read in `ps`: it must never hold
 * dashboard.token, only a login code that works once, for a minute.
 */
const TOKEN = 'dash-login-link-token-0123456789'
let s: TestServer

beforeAll(async () => {
  s = await startTestServer({ dashboard: { token: TOKEN } })
})
afterAll(async () => {
  await s.cleanup()
})

const cookieOf = (res: Awaited<ReturnType<typeof request>>): string => String(res.headers['set-cookie']).split(';')[0]

describe("the desktop app's link to the dashboard", () => {
  it('holds no token, logs the browser in once, and is used up then', async () => {
    const link = s.server.dashboardLoginUrl()
    expect(link).not.toContain(TOKEN)
    // The code in the fragment, which the login page posts: never in a request line.
    expect(link.startsWith(`${s.url}/login#login=`)).toBe(true)
    const first = await loginFromLink(link)
    expect(first.status).toBe(303)
    expect(first.headers.location).toBe('/')
    expect((await request(`${s.url}/api/dashboard/summary`, { headers: { cookie: cookieOf(first) } })).status).toBe(200)
    // Someone who read it on a command line comes too late.
    const again = await loginFromLink(link)
    expect(again.status).toBe(401)
    expect(again.headers['set-cookie']).toBeUndefined()
    // Each opening gets its own.
    const other = s.server.dashboardLoginUrl()
    expect(other).not.toBe(link)
    expect((await loginFromLink(other)).status).toBe(303)
    // A made-up code opens nothing.
    expect((await loginFromLink(`${s.url}/login#login=${'A'.repeat(43)}`)).status).toBe(401)
  })

  it('is never taken from an address\'s query (`/?login=<code>`): a code there is in history and access logs', async () => {
    const link = s.server.dashboardLoginUrl()
    const code = new URLSearchParams(new URL(link).hash.slice(1)).get('login')!
    for (const path of [`/?login=${code}`, `/?range=7d&login=${code}`]) {
      const res = await request(`${s.url}${path}`, { headers: { accept: 'text/html' } })
      expect(res.status).toBe(401)
      expect(res.headers['set-cookie']).toBeUndefined()
      expect(res.headers.location).toBeUndefined()
    }
    // Nothing Burnrate opens puts a code in a query.
    for (let i = 0; i < 3; i++) expect(new URL(s.server.dashboardLoginUrl()).search).toBe('')
    // The code sent in a query was not taken (nor used up): the login page still posts it.
    expect((await loginFromLink(link)).status).toBe(303)
  })

  it('is the plain address when the dashboard has no token', async () => {
    const open = await startTestServer({})
    try {
      expect(open.server.dashboardLoginUrl()).toBe(open.url)
    } finally {
      await open.cleanup()
    }
  })

  it('a code stops working after a minute', () => {
    let now = 1_000_000
    const sessions = new DashboardSessions({ now: () => now })
    const late = sessions.loginCode()
    const soon = sessions.loginCode()
    expect(sessions.redeem(soon)).toBe(true)
    now += LOGIN_CODE_MS + 1
    expect(sessions.redeem(late)).toBe(false)
  })
})
