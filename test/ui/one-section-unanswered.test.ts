import { describe, expect, it } from 'vitest'
import { makeCall } from '../dashboard/seed'
import { NO_BROWSER } from '../e2e/browser'
import { useDashboard } from '../support/dashboard-page'

// The server answers every figure's request but one, whose connection fails (reset, or given up
// unanswered). README, The dashboard: a view whose last load failed shows the error and a dash,
// never an earlier refresh's figures. The summary cards went on showing their last figures as
// current, with no word of it, beside the other views' new ones: Spend today $0.50 while the
// chart and the breakdown, refreshed, counted $1.50.

const dash = useDashboard({
  before: async ({ t }) => {
    t.server.ledger.record(makeCall({ ts: Date.now() - 60_000, cost_usd: 0.5 }))
    await t.server.ledger.flush()
  },
})

describe.skipIf(NO_BROWSER !== null)('one view whose request fails while the others are answered', { timeout: 120_000 }, () => {
  it('says so, and shows no earlier figures as current; then comes back', async () => {
    const { page, t } = dash
    const today = page.getByTestId('card-today').locator('.value')
    const chart = page.getByTestId('chart-total')
    await expect.poll(() => today.textContent()).toBe('$0.50')
    await page.route(/\/api\/dashboard\/summary(\?|$)/, (route) => route.abort('connectionreset'))
    t.server.ledger.record(makeCall({ ts: Date.now() - 30_000, cost_usd: 1 }))
    await t.server.ledger.flush()
    await expect.poll(() => chart.textContent()).toMatch(/^\$1\.50/)
    // The round that refreshed the chart is the one whose summary failed.
    await expect.poll(() => page.getByTestId('summary').locator('.cards-error').count()).toBe(1)
    expect(await page.getByTestId('summary').locator('.cards-error').textContent()).toMatch(/did not answer/)
    expect(await today.textContent()).not.toContain('$')
    expect(await page.getByTestId('unreachable').count()).toBe(0)
    await page.unroute(/\/api\/dashboard\/summary(\?|$)/)
    await expect.poll(() => today.textContent()).toBe('$1.50')
    expect(await page.getByTestId('summary').locator('.cards-error').count()).toBe(0)
  })
})
