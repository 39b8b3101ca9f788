import type { Browser, Page, Route } from 'playwright'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { NO_BROWSER, launchChromium, openPage, serveBuiltRenderer, unlockAdmin } from '../e2e/browser'
import { type TestServer, startTestServer } from '../support/server'

// Unlocked, the Connect panel's agent switches reload /api/admin/agents every 5 s. On a slow
// server (it reads each agent's config files): one request on its way at a time, not one more
// every 5 s.

const TOKEN = 'slow-agents-token-0123456789abcdef'
let t: TestServer
let browser: Browser
let unserve: (() => void) | undefined
let page: Page
const held: Route[] = []
let holding = false
let rounds = 0

beforeAll(async () => {
  if (NO_BROWSER) return
  unserve = serveBuiltRenderer()
  t = await startTestServer({ timezone: 'UTC', admin: { enabled: true, token: TOKEN } })
  browser = await launchChromium()
  page = await openPage(browser, `${t.url}/`)
  await page.route(/\/api\/admin\/agents(\?|$)/, (route) => (holding ? held.push(route) : route.continue()))
  page.on('requestfinished', (r) => {
    if (new URL(r.url()).pathname === '/api/dashboard/summary') rounds++
  })
  await unlockAdmin(page, TOKEN)
}, 120_000)

afterAll(async () => {
  await browser?.close()
  await t?.cleanup()
  unserve?.()
})

describe.skipIf(NO_BROWSER !== null)('agent switches on a slow server', { timeout: 120_000 }, () => {
  it('keep one request on its way at a time', async () => {
    await expect.poll(() => page.getByTestId('new-rule').count()).toBe(1)
    holding = true
    await expect.poll(() => held.length, { timeout: 30_000 }).toBe(1)
    // At least 15 s (four page refreshes, 5 s apart) with that request still waiting.
    const from = rounds
    await expect.poll(() => rounds - from, { timeout: 60_000 }).toBeGreaterThanOrEqual(4)
    expect(held.length).toBe(1)
    holding = false
    for (const r of held.splice(0)) await r.continue()
  })
})
