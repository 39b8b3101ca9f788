import type { Page } from 'playwright'
import { describe, expect, it } from 'vitest'
import { NO_BROWSER } from '../e2e/browser'
import { useDashboard } from '../support/dashboard-page'
import { eventually, postJson, request } from '../support/http'
import { chatPromptAnswer } from '../support/mock-upstream'

// Under a tenant filter the budget figures keep only the keys whose last call was that tenant's
// (README: Budgets). A rule blocking another tenant's key then read, in the filtered view, as a
// rule no key had used: "$0.00 / $0.05 0%" in Budget rules, "no calls yet" in Budgets and
// forecast, with nothing to say the view was filtered. Both panels must say so.

const TOKEN = 'tenant-filter-admin-token-0123456789'
const KEY = 'sk-tenant-blocked-000000000001'
const call = () =>
  postJson(`${dash.t.url}/v1/chat/completions`, { model: 'gpt-4o-mini', messages: [] }, { authorization: `Bearer ${KEY}`, 'x-burnrate-tenant': 'globex' })

const dash = useDashboard({
  config: {
    timezone: 'UTC',
    admin: { enabled: true, token: TOKEN },
    pricing: { overrides: [{ model: 'gpt-4o-mini', input_mtok: 100, output_mtok: 0 }] },
    budgets: { rules: [{ api_key_pattern: 'sk-tenant-*', daily_limit_usd: 0.05, action: 'block' }] },
  },
  responder: chatPromptAnswer(1000),
  adminToken: TOKEN,
  path: '/?tenant=acme',
  before: async ({ t }) => {
    expect((await call()).status).toBe(200)
    await eventually(async () => (await request(`${t.url}/api/dashboard/summary`)).json().today_requests === 1)
    expect((await call()).status).toBe(429)
  },
})

const text = async (l: ReturnType<Page['locator']>) => ((await l.count()) ? ((await l.first().textContent()) ?? '').replace(/\s+/g, ' ') : '')

describe.skipIf(NO_BROWSER !== null)("a rule blocking another tenant's key, under a tenant filter", { timeout: 120_000 }, () => {
  it('Budget rules says the bars are of the tenant’s keys only, not $0.00 0%', async () => {
    const { page } = dash
    const row = page.locator('#rules [data-testid="rule-row"][data-pattern="sk-tenant-*"]')
    await expect.poll(() => row.count(), { timeout: 20_000 }).toBe(1)
    const daily = row.getByTestId('rule-daily')
    await expect.poll(() => text(daily)).toContain('no key of tenant acme')
    expect(await text(daily)).not.toMatch(/0%/)
    expect(await text(page.locator('#rules .sub'))).toContain('tenant acme')
  })

  it('Budgets and forecast says the view is filtered, not "no calls yet"', async () => {
    const { page } = dash
    const panel = page.locator('#budget-forecast')
    await expect.poll(() => text(panel.getByTestId('budget-window'))).toContain('sk-tenant-*')
    expect(await text(panel.getByTestId('budget-window'))).not.toContain('no calls yet')
    expect(await text(panel.getByTestId('budget-window'))).toContain('no key of tenant acme')
    expect(await text(panel.locator('.sub'))).toContain('tenant acme')
  })
})
