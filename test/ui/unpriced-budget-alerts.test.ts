import { describe, expect, it } from 'vitest'
import { makeCall } from '../dashboard/seed'
import { NO_BROWSER } from '../e2e/browser'
import { useDashboard } from '../support/dashboard-page'

// The alerts at the top of the page ("near limit", "blocked") gave a key's spend under a rule as a
// plain "$0.90 of $1.00" when calls of a model with no known price were counted as $0 in it,
// where Budgets and forecast marks the same figure. The alert's spend now carries the mark
// ("$0.90 + 2 unpriced of $1.00"), and its hover says the real spend is more.

const KEY = 'sk-test-key-000000'
const dash = useDashboard({
  config: {
    timezone: 'UTC',
    budgets: { rules: [{ api_key_pattern: KEY, daily_limit_usd: 1, action: 'warn' }] },
  },
  before: async ({ t }) => {
    const at = Date.now() - 60_000
    t.server.ledger.record(makeCall({ ts: at, model: 'gpt-4o-mini', cost_usd: 0.9 }))
    for (let i = 1; i <= 2; i++) t.server.ledger.record(makeCall({ ts: at + i, model: 'mystery-1', cost_usd: 0, priced: false }))
    await t.server.ledger.flush()
  },
})

describe.skipIf(NO_BROWSER !== null)('unpriced calls in the budget alerts', { timeout: 120_000 }, () => {
  it("are marked beside the key's spend under the rule", async () => {
    const { page } = dash
    const amount = page.getByTestId('budget-alerts').getByTestId('budget-alert-amount')
    await expect.poll(() => amount.count(), { timeout: 15_000 }).toBe(1)
    await expect.poll(() => amount.getByTestId('unpriced-count').textContent(), { timeout: 15_000 }).toBe('+ 2 unpriced')
    expect((await amount.textContent())!.replace(/\s+/g, ' ').trim()).toBe('$0.90 + 2 unpriced of $1.00')
    expect(await amount.getAttribute('title')).toMatch(/^\$0\.90 of \$1\.00: 2 calls of a model with no known price count as \$0 in it/)
    expect(await page.getByTestId('budget-alerts').textContent()).toMatch(/near limit.*is close to its daily limit/)
  })
})
