import http from 'node:http'
import type { Browser } from 'playwright'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { NO_BROWSER, launchChromium } from '../e2e/browser'
import { request } from '../support/http'
import { type TestServer, startTestServer } from '../support/server'

/**
 * Cookies are kept per host, not per port: a page on any other port of 127.0.0.1 (another
 * user's server, a local tool's page the user opens) may set a cookie under the dashboard's own
 * name with a longer path. The browser then sends both, the longer path's first (RFC 6265 5.4),
 * and only the first was read: the owner was locked out of the dashboard API, logging in again
 * changed nothing (the new session is at Path=/, behind the other), until they cleared cookies.
 */
const TOKEN = 'dash-toss-token-0123456789'
let s: TestServer
let port: number

beforeAll(async () => {
  s = await startTestServer({ dashboard: { token: TOKEN } })
  port = Number(new URL(s.url).port)
})
afterAll(async () => {
  await s.cleanup()
})

async function login(): Promise<string> {
  const res = await request(`${s.url}/?token=${TOKEN}`)
  expect(res.status).toBe(303)
  return String(res.headers['set-cookie']).split(';')[0].split('=')[1]
}

describe('a cookie under the dashboard session name set by a page on another port', () => {
  it('does not hide the real session sent beside it', async () => {
    const session = await login()
    const name = `burnrate_dashboard_${port}`
    for (const cookie of [`${name}=junk; ${name}=${session}`, `${name}=; ${name}=${session}`, `other=1; ${name}=x; ${name}=${session}; b=2`]) {
      const res = await request(`${s.url}/api/dashboard/summary`, { headers: { cookie } })
      expect({ cookie, status: res.status }).toEqual({ cookie, status: 200 })
    }
    // Only values that are sessions open anything, and wrong ones are no guesses.
    expect((await request(`${s.url}/api/dashboard/summary`, { headers: { cookie: `${name}=junk; ${name}=junk2` } })).status).toBe(401)
  })

  it.skipIf(NO_BROWSER)('in Chromium: a page on another 127.0.0.1 port cannot lock the owner out of the dashboard', async () => {
    const other = http.createServer((_req, res) => {
      res.setHeader('content-type', 'text/html')
      res.end('<!doctype html><title>another local page</title>')
    })
    await new Promise<void>((r) => other.listen(0, '127.0.0.1', r))
    let browser: Browser | null = null
    try {
      browser = await launchChromium()
      const page = await browser.newPage()
      await page.goto(`${s.url}/?token=${TOKEN}`)
      expect(await page.evaluate(async () => (await fetch('/api/dashboard/summary')).status)).toBe(200)
      await page.goto(`http://127.0.0.1:${(other.address() as { port: number }).port}/`)
      await page.evaluate((p) => {
        document.cookie = `burnrate_dashboard_${p}=junk; path=/api`
      }, port)
      await page.goto(`${s.url}/api/health`)
      expect(await page.evaluate(async () => (await fetch('/api/dashboard/summary')).status)).toBe(200)
    } finally {
      await browser?.close()
      other.close()
    }
  }, 60_000)
})
