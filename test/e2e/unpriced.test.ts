import { join } from 'node:path'
import type { Browser, Page } from 'playwright'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { postJson } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'
import { NO_BROWSER, ROOT, ensureRendererBuilt, launchChromium } from './browser'

// An unknown model priced from the dashboard in Chromium, and its past calls re-priced; the
// Plan windows panel shows the vendor's meter.

const TOKEN = 'e2e-admin-token-prices-0123456789'
const MODEL = 'gpt-6.1-sol'
let upstream: MockUpstream
let t: TestServer
let browser: Browser
let page: Page

beforeAll(async () => {
  if (NO_BROWSER) return
  ensureRendererBuilt()
  process.env.BURNRATE_RENDERER_DIR = join(ROOT, 'out/renderer')
  upstream = await startMockUpstream(() => ({
    status: 200,
    headers: {
      'content-type': 'application/json',
      'x-codex-primary-used-percent': '62',
      'x-codex-primary-window-minutes': '300',
      'x-codex-primary-reset-at': String(Math.floor(Date.now() / 1000) + 7200),
    },
    body: JSON.stringify({ id: 'resp_1', object: 'response', model: MODEL, usage: { input_tokens: 1_000_000, output_tokens: 100_000 } }),
  }))
  t = await startTestServer({ admin: { enabled: true, token: TOKEN } }, upstream.url)
  for (let i = 0; i < 2; i++) {
    const r = await postJson(`${t.url}/chatgpt/codex/responses`, { model: MODEL, input: 'hi' }, { authorization: 'Bearer eyJ.chatgpt.token-dddd', 'chatgpt-account-id': 'acct_1' })
    expect(r.status).toBe(200)
  }
  browser = await launchChromium()
  const ctx = await browser.newContext({ viewport: { width: 1440, height: 900 } })
  await ctx.addInitScript((token) => sessionStorage.setItem('burnrate.adminToken', token), TOKEN)
  page = await ctx.newPage()
  await page.goto(`${t.url}/`)
}, 120_000)

afterAll(async () => {
  await browser?.close()
  await t?.cleanup()
  await upstream?.close()
  delete process.env.BURNRATE_RENDERER_DIR
})

describe.skipIf(NO_BROWSER !== null)('prices and plans in the dashboard', { timeout: 60_000 }, () => {
  it('shows the plan window from the x-codex headers', async () => {
    const w = page.getByTestId('plan-window')
    await expect.poll(() => w.count(), { timeout: 15_000 }).toBe(1)
    expect(await w.textContent()).toMatch(/5h\s*62%.*resets in/)
  })

  it('lists the unknown model, prices it from the form and re-prices its past calls', async () => {
    const row = page.getByTestId('unpriced-row')
    await expect.poll(() => row.count(), { timeout: 15_000 }).toBe(1)
    expect(await row.textContent()).toContain(MODEL)
    await row.getByLabel('input price').fill('3')
    await row.getByLabel('output price').fill('12')
    await row.getByTestId('set-price').click()
    await expect.poll(() => page.getByTestId('price-message').textContent(), { timeout: 10_000 }).toMatch(/later calls are priced/)
    await row.getByTestId('reprice').click()
    await expect.poll(() => page.getByTestId('unpriced-empty').count(), { timeout: 10_000 }).toBe(1)
    const costs = t.server.db.prepare('SELECT cost_usd, priced, billing FROM calls ORDER BY id').all()
    expect(costs).toEqual([
      { cost_usd: 4.2, priced: 1, billing: 'subscription' },
      { cost_usd: 4.2, priced: 1, billing: 'subscription' },
    ])
    // Plan usage, not spend.
    await expect.poll(() => page.getByTestId('plan-value').textContent(), { timeout: 10_000 }).toMatch(/\$8\.40.*plan usage/)
  })
})
