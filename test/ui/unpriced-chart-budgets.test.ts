import { describe, expect, it } from 'vitest'
import { makeCall } from '../dashboard/seed'
import { NO_BROWSER } from '../e2e/browser'
import { useDashboard } from '../support/dashboard-page'

// Calls of a model with no known price are recorded at $0. The cost chart's total and the budgets
// panel's spend, share and forecast summed them as $0 and showed a plain figure, where the cards
// mark theirs: a key whose spend is unknown read as under its limit and on pace to stay so. Each
// now says so beside its amount, as the cards do: "$1.20 + 3 unpriced".

const KEY = 'sk-test-key-000000'
const dash = useDashboard({
  config: {
    timezone: 'UTC',
    budgets: { rules: [{ api_key_pattern: KEY, daily_limit_usd: 10, monthly_limit_usd: 100, action: 'warn' }] },
  },
  before: async ({ t }) => {
    const at = Date.now() - 60_000
    t.server.ledger.record(makeCall({ ts: at, model: 'gpt-4o-mini', cost_usd: 1.2 }))
    for (let i = 1; i <= 3; i++) t.server.ledger.record(makeCall({ ts: at + i, model: 'mystery-1', cost_usd: 0, priced: false }))
    await t.server.ledger.flush()
  },
})

describe.skipIf(NO_BROWSER !== null)('unpriced calls in the cost chart and the budgets', { timeout: 120_000 }, () => {
  it("are marked beside the chart's total, each rule's spend and forecast, and the overall pace", async () => {
    const { page } = dash
    const mark = (scope: ReturnType<typeof page.getByTestId>) => scope.getByTestId('unpriced-count')

    const total = page.getByTestId('chart-total')
    await expect.poll(() => total.textContent(), { timeout: 15_000 }).toMatch(/^\s*\$1\.20 \+ 3 unpriced in the /)
    expect(await total.getAttribute('title')).toMatch(/3 calls of a model with no known price count as \$0/)
    // Tokens and requests are not money: no mark.
    await page.getByTestId('metric').getByRole('button', { name: 'Requests' }).click()
    await expect.poll(() => mark(total).count(), { timeout: 15_000 }).toBe(0)

    const windows = page.getByTestId('budget-window')
    await expect.poll(() => windows.count(), { timeout: 15_000 }).toBe(2)
    for (const period of ['daily', 'monthly']) {
      const row = windows.filter({ hasText: period })
      await expect.poll(() => mark(row.locator('.limit')).textContent(), { timeout: 15_000 }).toBe('+ 3 unpriced')
      expect(await row.locator('.limit .line').textContent()).toMatch(/^\s*\$1\.20 \+ 3 unpriced\s*\/ \$/)
      expect(await row.getByRole('progressbar').getAttribute('aria-valuetext')).toMatch(/^at least /)
      expect(await row.locator('.limit').getAttribute('title')).toMatch(/3 calls of a model with no known price count as \$0/)
      expect(await row.getByTestId('budget-projected').textContent()).toMatch(/^\s*\$[\d,.]+ \+ 3 unpriced\s*$/)
    }
    const overall = page.getByTestId('overall-forecast')
    await expect.poll(() => mark(overall).count(), { timeout: 15_000 }).toBe(4)
    expect(await mark(overall).first().getAttribute('title')).toMatch(/real spend is more than shown/)
    expect(await overall.textContent()).toMatch(/Today[^:]*: \$1\.20 \+ 3 unpriced, on pace for \$[\d,.]+ \+ 3 unpriced/)
  })
})
