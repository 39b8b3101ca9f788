import { describe, expect, it } from 'vitest'
import { NO_BROWSER } from '../e2e/browser'
import { useDashboard } from '../support/dashboard-page'
import { eventually, postJson, request } from '../support/http'
import { chatPromptAnswer } from '../support/mock-upstream'

// A key blocked by a runtime rule: the page says so (an alert, the rule's window at 100% in Budgets
// and forecast). Raising the rule's limit or deleting it from the Budget rules panel must show at
// once: the alert went on saying "blocked" and the forecast the old limit until the page's next
// refresh of its figures, seconds later, which a user reads as "the change did not take".
// The page's clock is paused after the first load, so no timed refresh can do it for the change.

const TOKEN = 'rule-change-admin-token-0123456789'
const KEY = 'sk-stale-rule-000000000001'
const PATTERN = 'sk-stale-*'
const admin = { authorization: `Bearer ${TOKEN}` }
const call = () => postJson(`${dash.t.url}/v1/chat/completions`, { model: 'gpt-4o-mini', messages: [] }, { authorization: `Bearer ${KEY}` })

const dash = useDashboard({
  config: { timezone: 'UTC', admin: { enabled: true, token: TOKEN }, pricing: { overrides: [{ model: 'gpt-4o-mini', input_mtok: 100, output_mtok: 0 }] } },
  responder: chatPromptAnswer(1000),
  adminToken: TOKEN,
  clock: true,
  before: async ({ t }) => {
    // $0.10 spent today, then a rule whose $0.05 daily limit it is over.
    expect((await call()).status).toBe(200)
    await eventually(async () => expect((await request(`${t.url}/api/dashboard/summary`)).json().today_requests).toBe(1))
    expect((await postJson(`${t.url}/api/admin/budgets/rules`, { api_key_pattern: PATTERN, daily_limit_usd: 0.05, action: 'block' }, admin)).status).toBe(201)
    expect((await call()).status).toBe(429)
  },
})

describe.skipIf(NO_BROWSER !== null)('a budget rule changed from the page', { timeout: 120_000 }, () => {
  it('shows its new limit, then its removal, without waiting for the next refresh', async () => {
    const { page, t } = dash
    const alert = page.getByTestId('budget-alerts').locator('li')
    const windows = page.getByTestId('budget-window')
    const row = page.locator(`#rules [data-testid="rule-row"][data-pattern="${PATTERN}"]`)
    await expect.poll(() => alert.first().textContent()).toMatch(/blocked.*reached its daily limit under sk-stale-\*/)
    await expect.poll(() => row.count()).toBe(1)
    await expect.poll(() => windows.first().textContent()).toMatch(/\$0\.10\s*\/\s*\$0\.05/)
    // From here on no timer fires: only the changes themselves may bring new figures.
    await page.clock.pauseAt(Date.now() + 1000)

    // The same pattern again with a $100 limit replaces the rule.
    const rules = page.locator('#rules')
    await rules.getByTestId('new-rule').click()
    await rules.locator('#rf-pattern').fill(PATTERN)
    await rules.locator('#rf-daily').fill('100')
    await rules.getByRole('button', { name: 'Save rule' }).click()
    await expect.poll(() => rules.getByTestId('rule-form').count()).toBe(0)
    expect((await request(`${t.url}/api/admin/budgets/rules`, { headers: admin })).json()).toEqual([expect.objectContaining({ api_key_pattern: PATTERN, daily_limit_usd: 100 })])
    await expect.poll(() => windows.first().textContent()).toMatch(/\$0\.10\s*\/\s*\$100\.00/)
    await expect.poll(() => alert.count()).toBe(0)
    await expect.poll(() => row.getByTestId('rule-daily').textContent()).toMatch(/\$0\.10\s*\/\s*\$100\.00/)

    // Deleted: the rule leaves Budgets and forecast too.
    await row.getByTestId('delete-rule').click()
    await expect.poll(() => row.count()).toBe(0)
    await expect.poll(() => page.getByTestId('no-budgets').count()).toBe(1)
    expect(await windows.count()).toBe(0)
  })
})
