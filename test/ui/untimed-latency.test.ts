import type { Browser } from 'playwright'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { makeCall } from '../dashboard/seed'
import { NO_BROWSER, launchChromium, openPage, serveBuiltRenderer } from '../e2e/browser'
import { type TestServer, startTestServer } from '../support/server'

// A ledger whose calls have no latency (read from the agents' logs, a batch's requests: latency_ms
// 0) shows none: not "0 ms" for the average and p95, nor for a call in Most expensive requests.
// And the requests card, which counts them, does not call them proxied calls.

let t: TestServer
let browser: Browser
let unserve: (() => void) | undefined

beforeAll(async () => {
  if (NO_BROWSER) return
  unserve = serveBuiltRenderer()
  t = await startTestServer({ timezone: 'UTC', import: { watch: false } })
  const at = Date.now() - 10 * 60_000
  t.server.ledger.record(makeCall({ ts: at, latency_ms: 0, source: 'import', api_key_hash: '', key_hint: '', cost_usd: 0.5, model: 'claude-sonnet-4-5', provider: 'anthropic' }))
  t.server.ledger.record(makeCall({ ts: at + 1, latency_ms: 0, endpoint: 'batch.chat.completions', cost_usd: 0.25 }))
  await t.server.ledger.flush()
  browser = await launchChromium()
}, 120_000)

afterAll(async () => {
  await browser?.close()
  await t?.cleanup()
  unserve?.()
})

describe.skipIf(NO_BROWSER !== null)('calls without a latency', { timeout: 120_000 }, () => {
  it('read as no latency, not 0 ms', async () => {
    const page = await openPage(browser, `${t.url}/`)
    const rows = page.getByTestId('expensive-row')
    await expect.poll(() => rows.count()).toBe(2)
    await expect.poll(() => page.getByTestId('error-rate').textContent()).toContain('of 2 requests')
    expect((await page.getByTestId('stat-avg').textContent())?.trim()).toBe('—')
    expect((await page.getByTestId('stat-p95').textContent())?.trim()).toBe('—')
    const requests = page.getByTestId('card-requests')
    expect((await requests.locator('.value').textContent())?.trim()).toBe('2')
    expect(await requests.locator('.hint').textContent()).not.toContain('proxied')
    for (const row of await rows.all()) {
      const cells = await row.locator('td').allTextContents()
      expect(cells[5].trim()).toBe('—')
    }
    await page.context().close()
  })
})
