import { mkdtempSync, rmSync } from 'node:fs'
import type { IncomingMessage } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Browser } from 'playwright'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { openInBrowser } from '../../src/main/desktop-logic/browser-login'
import { NO_BROWSER, launchChromium, serveBuiltRenderer } from '../e2e/browser'
import { eventually, request } from '../support/http'
import { type TestServer, startTestServer } from '../support/server'

/**
 * *Open in browser* hands the browser a private page (never the login code on a command line,
 * where other users read it in `ps`): in a real browser that page logs in, and the dashboard
 * it lands on reads its API with the session.
 */
const TOKEN = 'browser-login-page-token-0123456789'
let t: TestServer
let browser: Browser
let undo: () => void
/** Every request line the server was sent (path and query). */
let lines: string[] = []
const dir = mkdtempSync(join(tmpdir(), 'burnrate-login-page-'))

beforeAll(async () => {
  if (NO_BROWSER) return
  undo = serveBuiltRenderer()
  t = await startTestServer({ dashboard: { token: TOKEN } })
  t.server.http.on('request', (req: IncomingMessage) => lines.push(req.url ?? ''))
  browser = await launchChromium()
}, 60_000)
afterAll(async () => {
  await browser?.close()
  await t?.cleanup()
  undo?.()
  rmSync(dir, { recursive: true, force: true })
})

describe.skipIf(NO_BROWSER)('Open in browser, through the private page', () => {
  for (const how of ['the one-time code', 'the token (attached to a headless Burnrate)']) it(`logs the browser in with ${how} and shows the dashboard, whose API calls pass`, async () => {
    const page = await (await browser.newContext()).newPage()
    lines = []
    const answers: number[] = []
    page.on('response', (r) => {
      if (new URL(r.url()).pathname.startsWith('/api/dashboard/')) answers.push(r.status())
    })
    let opened = ''
    const link = how.startsWith('the token') ? `${t.url}/login#token=${TOKEN}` : t.server.dashboardLoginUrl()
    const secret = new URLSearchParams(new URL(link).hash.slice(1)).values().next().value as string
    openInBrowser(link, { dir, open: (u) => (opened = u) })
    await page.goto(opened)
    // Off the login address (the code used up), on the dashboard page.
    await eventually(() => page.url() === `${t.url}/`)
    // The code or token was posted: no request line (what a proxy's access log keeps) held it.
    expect(lines.length).toBeGreaterThan(0)
    expect(lines.filter((l) => l.includes(secret) || l.includes(encodeURIComponent(secret)))).toEqual([])
    // Its API calls carry the session (a redirect there would be the file page's navigation still,
    // which a browser sends no SameSite=Strict cookie with: the page itself would be refused).
    await eventually(() => answers.length > 0)
    expect(answers.every((s) => s === 200), answers.join(',')).toBe(true)
    // Nothing got in without the session.
    expect((await request(`${t.url}/api/dashboard/summary`)).status).toBe(401)
  }, 60_000)

  it('a browser without a session gets the login form; the token typed there is posted, and the dashboard loads', async () => {
    const page = await (await browser.newContext()).newPage()
    lines = []
    const answers: number[] = []
    page.on('response', (r) => {
      if (new URL(r.url()).pathname.startsWith('/api/dashboard/')) answers.push(r.status())
    })
    await page.goto(`${t.url}/?range=7d`)
    await page.getByLabel('Dashboard token').fill('not-the-token-0123456789')
    await page.getByRole('button', { name: 'Log in' }).click()
    await eventually(async () => (await page.getByRole('alert').textContent())?.includes('not the dashboard token'))
    await page.getByLabel('Dashboard token').fill(TOKEN)
    await page.getByRole('button', { name: 'Log in' }).click()
    // Back at the address it was opened at, its filter kept (test/security/login-keeps-address.test.ts).
    await eventually(() => page.url() === `${t.url}/?range=7d`)
    await eventually(() => answers.length > 0)
    expect(answers.every((s) => s === 200), answers.join(',')).toBe(true)
    expect(lines.filter((l) => l.includes(TOKEN))).toEqual([])
  }, 60_000)

  it("the desktop window's address: logged in from the fragment, whose admin token reaches the dashboard", async () => {
    const page = await (await browser.newContext()).newPage()
    await page.goto(`${t.url}/login#token=${TOKEN}&admin_token=admin-token-from-the-window-0123`)
    await eventually(() => page.url() === `${t.url}/`)
    await eventually(async () => (await page.evaluate(() => sessionStorage.getItem('burnrate.adminToken'))) === 'admin-token-from-the-window-0123')
  }, 60_000)
})
