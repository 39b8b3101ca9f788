import type { Browser, Page, Route } from 'playwright'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { NO_BROWSER, launchChromium, serveBuiltRenderer } from '../e2e/browser'
import { type TestServer, startTestServer } from '../support/server'

// The plan windows and unpriced-models panels reload after every refresh of the page (every 5 s).
// On a slow server (a busy PostgreSQL, a big ledger) their answers take longer than that: each
// refresh must not add another request while the last one is still on its way, or requests pile
// up on the server that is already too slow to answer them.

let t: TestServer
let browser: Browser
let page: Page
let unserve: (() => void) | undefined
const held: Record<string, Route[]> = { plans: [], unpriced: [] }
let rounds = 0

beforeAll(async () => {
  if (NO_BROWSER) return
  unserve = serveBuiltRenderer()
  t = await startTestServer({ timezone: 'UTC' })
  browser = await launchChromium()
  page = await browser.newPage()
  // A slow server for these two endpoints: their requests reach it only when the test lets them.
  await page.route(/\/api\/dashboard\/(plans|unpriced)(\?|$)/, (route) => {
    held[new URL(route.request().url()).pathname.endsWith('plans') ? 'plans' : 'unpriced'].push(route)
  })
  page.on('requestfinished', (r) => {
    if (new URL(r.url()).pathname === '/api/dashboard/summary') rounds++
  })
  await page.goto(`${t.url}/`)
}, 120_000)

afterAll(async () => {
  await browser?.close()
  await t?.cleanup()
  unserve?.()
})

describe.skipIf(NO_BROWSER !== null)('panels polling a slow server', { timeout: 120_000 }, () => {
  it('keep one request on the way at a time, and show the answer once it comes', async () => {
    // Three refreshes of the page after the first, with the first answers still not given.
    await expect.poll(() => rounds, { timeout: 60_000 }).toBeGreaterThanOrEqual(4)
    expect(held.plans.length).toBe(1)
    expect(held.unpriced.length).toBe(1)
    for (const r of [...held.plans.splice(0), ...held.unpriced.splice(0)]) await r.continue()
    await expect.poll(() => page.getByTestId('plans-empty').count()).toBe(1)
    // Answered: the next refresh asks again.
    await expect.poll(() => held.plans.length, { timeout: 30_000 }).toBeGreaterThanOrEqual(1)
    for (const r of [...held.plans.splice(0), ...held.unpriced.splice(0)]) await r.continue()
  })
})
