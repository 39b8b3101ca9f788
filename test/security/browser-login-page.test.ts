import { mkdtempSync, rmSync } from 'node:fs'
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
const dir = mkdtempSync(join(tmpdir(), 'burnrate-login-page-'))

beforeAll(async () => {
  if (NO_BROWSER) return
  undo = serveBuiltRenderer()
  t = await startTestServer({ dashboard: { token: TOKEN } })
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
    const answers: number[] = []
    page.on('response', (r) => {
      if (new URL(r.url()).pathname.startsWith('/api/dashboard/')) answers.push(r.status())
    })
    let opened = ''
    openInBrowser(how.startsWith('the token') ? `${t.url}/?token=${TOKEN}` : t.server.dashboardLoginUrl(), { dir, open: (u) => (opened = u) })
    await page.goto(opened)
    // Off the login address (the code used up), on the dashboard page.
    await eventually(() => page.url().startsWith(t.url) && !/login=|token=/.test(page.url()))
    // Its API calls carry the session (a redirect there would be the file page's navigation still,
    // which a browser sends no SameSite=Strict cookie with: the page itself would be refused).
    await eventually(() => answers.length > 0)
    expect(answers.every((s) => s === 200), answers.join(',')).toBe(true)
    // Nothing got in without the session.
    expect((await request(`${t.url}/api/dashboard/summary`)).status).toBe(401)
  }, 60_000)
})
