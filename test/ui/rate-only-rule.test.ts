import type { Browser, Page } from 'playwright'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { NO_BROWSER, launchChromium, openPage, serveBuiltRenderer } from '../e2e/browser'
import { eventually, postJson, request } from '../support/http'
import { type MockUpstream, chatPromptAnswer, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'

// A rule with only per-minute limits (requests_per_minute, tokens_per_minute) has no money window:
// `GET /api/dashboard/budgets` lists it with `windows: []`. Budgets and forecast drew a table of
// headings and no row at all (neither "No budget rules" nor the rule): it must name the rule and
// say it limits calls per minute only.

const KEY = 'sk-rate-only-000000000001'
let upstream: MockUpstream
let t: TestServer
let browser: Browser
let unserve: (() => void) | undefined
let page: Page

beforeAll(async () => {
  if (NO_BROWSER) return
  unserve = serveBuiltRenderer()
  upstream = await startMockUpstream()
  upstream.setResponder(chatPromptAnswer(1000))
  t = await startTestServer(
    { timezone: 'UTC', budgets: { rules: [{ api_key_pattern: 'sk-rate-*', requests_per_minute: 60, tokens_per_minute: 100000, action: 'block' }] } },
    upstream.url,
  )
  expect((await postJson(`${t.url}/v1/chat/completions`, { model: 'gpt-4o-mini', messages: [] }, { authorization: `Bearer ${KEY}` })).status).toBe(200)
  await eventually(async () => expect((await request(`${t.url}/api/dashboard/summary`)).json().today_requests).toBe(1))
  const b = (await request(`${t.url}/api/dashboard/budgets`)).json()
  expect(b.rules.length).toBeGreaterThan(0)
  expect(b.rules.every((r: { windows: unknown[] }) => r.windows.length === 0)).toBe(true)
  browser = await launchChromium()
  page = await openPage(browser, `${t.url}/`)
}, 120_000)

afterAll(async () => {
  await browser?.close()
  await t?.cleanup()
  await upstream?.close()
  unserve?.()
})

describe.skipIf(NO_BROWSER !== null)('a rule with per-minute limits only in Budgets and forecast', { timeout: 120_000 }, () => {
  it('is a row saying it limits calls per minute, not an empty table', async () => {
    const panel = page.locator('#budget-forecast')
    const row = panel.getByTestId('budget-rate-only')
    await expect.poll(() => row.count(), { timeout: 20_000 }).toBe(1)
    const text = ((await row.textContent()) ?? '').replace(/\s+/g, ' ')
    expect(text).toContain('sk-rate-*')
    expect(text).toContain('sk-…0001')
    expect(text).toContain('60 requests/min · 100,000 tokens/min')
    expect(text).toMatch(/no spend limit/i)
  })
})
