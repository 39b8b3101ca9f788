import type { Browser, Page } from 'playwright'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { makeCall } from '../dashboard/seed'
import { NO_BROWSER, launchChromium, openPage, serveBuiltRenderer } from '../e2e/browser'
import { freePort } from '../support/postgres'
import { type TestServer, startTestServer } from '../support/server'

// dashboard.token set and the page opened with /?token=…; then Burnrate restarts (dashboard
// sessions live in memory and end with it, README: The dashboard) and new calls arrive. The page
// asks for the token again, and no longer shows its old figures as live.

const TOKEN = 'restart-dash-token-0123456789abcdef'
let t: TestServer
let browser: Browser
let unserve: (() => void) | undefined
let page: Page

beforeAll(async () => {
  if (NO_BROWSER) return
  unserve = serveBuiltRenderer()
  t = await startTestServer({ timezone: 'UTC', server: { port: await freePort() }, dashboard: { token: TOKEN } })
  t.server.ledger.record(makeCall({ cost_usd: 0.5 }))
  t.server.ledger.flush()
  browser = await launchChromium()
  page = await openPage(browser, `${t.url}/?token=${TOKEN}`)
}, 120_000)

afterAll(async () => {
  await browser?.close()
  await t?.cleanup()
  unserve?.()
})

describe.skipIf(NO_BROWSER !== null)('the dashboard token after a restart', { timeout: 120_000 }, () => {
  it('hides the old figures and stops saying "Live · updated" until the token is given again', async () => {
    const card = page.getByTestId('card-today')
    await expect.poll(() => card.locator('.value').textContent()).toBe('$0.50')
    await expect.poll(() => page.getByTestId('live-status').textContent()).toMatch(/^Live · updated/)
    t = await t.restart()
    t.server.ledger.record(makeCall({ cost_usd: 1 }))
    t.server.ledger.flush()
    await expect.poll(() => page.getByTestId('needs-token').count()).toBe(1)
    // The round that met the 401 is the one that hid the figures: no figure is left as if current.
    expect(await card.locator('.value').textContent()).not.toContain('$')
    expect(await page.getByTestId('live-status').textContent()).not.toMatch(/Live/)
    expect(await page.getByTestId('getting-started').count()).toBe(0)
    // Logging in again brings the current figures back.
    await page.goto(`${t.url}/?token=${TOKEN}`)
    await expect.poll(() => card.locator('.value').textContent()).toBe('$1.50')
    await expect.poll(() => page.getByTestId('live-status').textContent()).toMatch(/^Live · updated/)
  })
})
