import type { Browser, Page, Route } from 'playwright'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { makeCall } from '../dashboard/seed'
import { NO_BROWSER, launchChromium, serveBuiltRenderer } from '../e2e/browser'
import { type TestServer, startTestServer } from '../support/server'

// The page refreshes every section in rounds, a round once every section has answered. One
// request the server never answers (a hung process, a connection dropped without a word across a
// laptop's sleep or a network change) held that round, and so every later one, for good: the
// page showed its last figures under "Live" however much was spent since, until reloaded.
// The page's clock is driven by the test; the summary request of one refresh is never answered.

let t: TestServer
let browser: Browser
let unserve: (() => void) | undefined
let page: Page
const held: Route[] = []
let hang = false

beforeAll(async () => {
  if (NO_BROWSER) return
  unserve = serveBuiltRenderer()
  t = await startTestServer({ timezone: 'UTC' })
  t.server.ledger.record(makeCall({ cost_usd: 0.5 }))
  await t.server.ledger.flush()
  browser = await launchChromium()
  page = await (await browser.newContext({ viewport: { width: 1440, height: 900 } })).newPage()
  await page.route(/\/api\/dashboard\/summary(\?|$)/, (route) => {
    if (!hang) return void route.continue()
    hang = false
    held.push(route)
  })
  await page.clock.install()
  await page.goto(`${t.url}/`)
}, 120_000)

afterAll(async () => {
  for (const r of held) await r.abort().catch(() => {})
  await browser?.close()
  await t?.cleanup()
  unserve?.()
})

describe.skipIf(NO_BROWSER !== null)('a refresh the server never answers', { timeout: 120_000 }, () => {
  it('does not stop the page from refreshing', async () => {
    const today = page.getByTestId('card-today').locator('.value')
    await expect.poll(() => today.textContent()).toBe('$0.50')
    await page.clock.pauseAt(Date.now() + 500)
    hang = true
    // The next refresh's summary request is never answered.
    await expect.poll(async () => {
      await page.clock.runFor(1000)
      return held.length
    }).toBe(1)
    t.server.ledger.record(makeCall({ cost_usd: 1 }))
    await t.server.ledger.flush()
    // A few minutes go by, a refresh due every 5 seconds: the new spend shows.
    await expect.poll(async () => {
      await page.clock.runFor(5000)
      return today.textContent()
    }, { timeout: 60_000 }).toBe('$1.50')
    expect(held.length).toBe(1)
  })
})
