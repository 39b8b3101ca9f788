import { describe, expect, it } from 'vitest'
import { makeCall } from '../dashboard/seed'
import { NO_BROWSER } from '../e2e/browser'
import { useDashboard } from '../support/dashboard-page'

// The Errors & latency panel's "Avg cost / request" divides the range's money by its requests, a
// call of no known price among them at $0: with one $0.40 call and three unpriced ones it read a
// plain "$0.10", where the summary card's average of the same calls says "+ 3 unpriced". It is a
// lower bound, and is now marked as one, with the range's count (the cost chart's, same range).
// It is an average over the calls billed per token ("Avg cost / billed call"): a subscription
// plan's calls, which cost no money per token, are not counted, and the hover says how many.

const dash = useDashboard({
  before: async ({ t }) => {
    // Two days ago: in the 7-day range only, out of today's summary, so the mark is the range's own.
    const at = Date.now() - 2 * 86_400_000
    t.server.ledger.record(makeCall({ ts: at, model: 'gpt-4o-mini', cost_usd: 0.4 }))
    for (let i = 1; i <= 3; i++) t.server.ledger.record(makeCall({ ts: at + i, model: 'mystery-2', cost_usd: 0, priced: false }))
    // Two calls of a subscription plan: no money per token, so not in the average (it is over the 4 calls billed per token).
    for (let i = 4; i <= 5; i++) t.server.ledger.record(makeCall({ ts: at + i, provider: 'anthropic', model: 'claude-sonnet-4-5', cost_usd: 0.3, billing: 'subscription' }))
    await t.server.ledger.flush()
  },
  path: '/?range=7d',
})

describe.skipIf(NO_BROWSER !== null)("the errors panel's average cost per request", { timeout: 120_000 }, () => {
  it("is marked a lower bound when the range holds calls of no known price, and not in a range that holds none", async () => {
    const { page } = dash
    const avg = page.locator('#errors dl > div').filter({ hasText: 'Avg cost / billed call' }).locator('dd')
    await expect.poll(() => avg.locator('.money').getAttribute('data-exact'), { timeout: 15_000 }).toBe('0.1')
    await expect.poll(() => avg.getByTestId('unpriced-count').textContent(), { timeout: 15_000 }).toBe('+ 3 unpriced')
    expect(await page.locator('#errors dl > div').filter({ hasText: 'Avg cost / billed call' }).getAttribute('title')).toBe(
      "The range's spend divided by its 4 calls billed per token (API calls); 2 subscription plan calls are not counted (no money per token)",
    )
    // The last 24 hours hold none of these calls: no call billed per token, so no average, and no mark.
    await page.getByTestId('range').locator('[data-range="24h"]').click()
    await expect.poll(() => avg.textContent(), { timeout: 15_000 }).toBe('—')
    expect(await avg.getByTestId('unpriced-count').count()).toBe(0)
  })
})
