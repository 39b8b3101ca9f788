import { describe, expect, it } from 'vitest'
import { NO_BROWSER } from '../e2e/browser'
import { useDashboard } from '../support/dashboard-page'
import { eventually, postJson, request } from '../support/http'
import { chatPromptAnswer } from '../support/mock-upstream'

// A $1.00 block limit spent to the cent by ten $0.10 calls: in binary floating point they add up
// to 0.9999999999999999, which the proxy counts as the limit reached (the 11th call is refused,
// test/budgets/exact-limit.test.ts). The page must say the same: blocked, 100%, not "near limit"
// at 99.9%. Each call is 1,000 input tokens of a model priced at $100 a million.

const KEY = 'sk-cent-reached-000000000001'

const call = () => postJson(`${dash.t.url}/v1/chat/completions`, { model: 'gpt-4o-mini', messages: [] }, { authorization: `Bearer ${KEY}` })

const dash = useDashboard({
  config: {
    timezone: 'UTC',
    pricing: { overrides: [{ model: 'gpt-4o-mini', input_mtok: 100, output_mtok: 0 }] },
    budgets: { rules: [{ api_key_pattern: 'sk-cent-*', daily_limit_usd: 1, action: 'block' }] },
  },
  responder: chatPromptAnswer(1000),
  before: async ({ t }) => {
    for (let i = 0; i < 10; i++) {
      expect((await call()).status).toBe(200)
      await eventually(async () => expect((await request(`${t.url}/api/dashboard/summary`)).json().today_requests).toBe(i + 1))
    }
  },
})

describe.skipIf(NO_BROWSER !== null)('a budget limit spent to the cent', { timeout: 120_000 }, () => {
  it('reads 100% and blocked on the page, as the proxy refuses the next call', async () => {
    const { page, t } = dash
    expect((await call()).status).toBe(429)
    const budgets = (await request(`${t.url}/api/dashboard/budgets`)).json()
    const w = budgets.rules[0].windows[0]
    // The spend is kept as summed, never rounded; the share says the limit is reached.
    expect(w.spent_usd).toBeCloseTo(1, 12)
    expect(w.pct).toBeGreaterThanOrEqual(1)

    const row = page.getByTestId('budget-window').first()
    await expect.poll(() => row.getAttribute('data-level')).toBe('bad')
    await expect.poll(() => row.textContent()).toMatch(/\$1\.00\s*\/\s*\$1\.00\s*100%/)
    expect(await row.locator('.limit').getAttribute('data-level')).toBe('bad')
    expect(await row.textContent()).toContain('reached')
    const alert = page.getByTestId('budget-alerts').locator('li').first()
    await expect.poll(() => alert.getAttribute('data-level')).toBe('over')
    expect(await alert.textContent()).toMatch(/blocked.*reached its daily limit under sk-cent-\*/)
  })
})
