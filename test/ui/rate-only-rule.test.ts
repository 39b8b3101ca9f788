import { describe, expect, it } from 'vitest'
import { NO_BROWSER } from '../e2e/browser'
import { useDashboard } from '../support/dashboard-page'
import { eventually, postJson, request } from '../support/http'
import { chatPromptAnswer } from '../support/mock-upstream'

// A rule with only per-minute limits (requests_per_minute, tokens_per_minute) has no money window:
// `GET /api/dashboard/budgets` lists it with `windows: []`. Budgets and forecast drew a table of
// headings and no row at all (neither "No budget rules" nor the rule): it must name the rule and
// say it limits calls per minute only.

const KEY = 'sk-rate-only-000000000001'
const dash = useDashboard({
  config: { timezone: 'UTC', budgets: { rules: [{ api_key_pattern: 'sk-rate-*', requests_per_minute: 60, tokens_per_minute: 100000, action: 'block' }] } },
  responder: chatPromptAnswer(1000),
  before: async ({ t }) => {
    expect((await postJson(`${t.url}/v1/chat/completions`, { model: 'gpt-4o-mini', messages: [] }, { authorization: `Bearer ${KEY}` })).status).toBe(200)
    await eventually(async () => expect((await request(`${t.url}/api/dashboard/summary`)).json().today_requests).toBe(1))
    const b = (await request(`${t.url}/api/dashboard/budgets`)).json()
    expect(b.rules.length).toBeGreaterThan(0)
    expect(b.rules.every((r: { windows: unknown[] }) => r.windows.length === 0)).toBe(true)
  },
})

describe.skipIf(NO_BROWSER !== null)('a rule with per-minute limits only in Budgets and forecast', { timeout: 120_000 }, () => {
  it('is a row saying it limits calls per minute, not an empty table', async () => {
    const { page } = dash
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
