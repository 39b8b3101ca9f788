import type { Browser, Page } from 'playwright'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { makeCall } from '../dashboard/seed'
import { NO_BROWSER, launchChromium, openPage, serveBuiltRenderer } from '../e2e/browser'
import { type TestServer, startTestServer } from '../support/server'

// The getting-started panel ("No calls metered yet") only over a ledger with no calls: not for a
// Claude-plan user (every call billing: subscription, $0 of spend) who last worked two days ago,
// nor for an unpriced call ($0) before that, at the default 24 h range.

let t: TestServer
let empty: TestServer
let browser: Browser
let unserve: (() => void) | undefined

beforeAll(async () => {
  if (NO_BROWSER) return
  unserve = serveBuiltRenderer()
  t = await startTestServer({ timezone: 'UTC' })
  empty = await startTestServer({ timezone: 'UTC' })
  const start = Date.now() - 2 * 86_400_000
  for (let i = 0; i < 40; i++) {
    t.server.ledger.record(makeCall({ ts: start + i * 1000, cost_usd: 0.3, billing: 'subscription', provider: 'anthropic', model: 'claude-sonnet-4-5', agent: 'claude-code', session: 'two-days-ago' }))
  }
  t.server.ledger.record(makeCall({ ts: start - 86_400_000, cost_usd: 0, priced: false, model: 'private-model' }))
  t.server.ledger.flush()
  browser = await launchChromium()
}, 120_000)

afterAll(async () => {
  await browser?.close()
  await t?.cleanup()
  await empty?.cleanup()
  unserve?.()
})

const open = (url: string): Promise<Page> => openPage(browser, `${url}/`)

describe.skipIf(NO_BROWSER !== null)('the getting-started panel', { timeout: 120_000 }, () => {
  it('does not say "no calls metered yet" over a ledger of plan and unpriced calls', async () => {
    const page = await open(t.url)
    // The summary is in (the panel would show with it), and the page is live.
    await expect.poll(() => page.getByTestId('card-month').locator('.value').textContent()).toContain('$')
    await expect.poll(() => page.getByTestId('live-status').textContent()).toMatch(/^Live/)
    expect(await page.getByTestId('getting-started').count()).toBe(0)
    await page.context().close()
  })

  it('still shows over an empty ledger', async () => {
    const page = await open(empty.url)
    await expect.poll(() => page.getByTestId('getting-started').count()).toBe(1)
    expect(await page.getByTestId('getting-started').innerText()).toContain('No calls metered yet')
    await page.context().close()
  })
})
