import { describe, expect, it } from 'vitest'
import { makeCall } from '../dashboard/seed'
import { NO_BROWSER } from '../e2e/browser'
import { useDashboard } from '../support/dashboard-page'
import { request } from '../support/http'

// Two calls of a model the price data does not know (recorded at $0, unpriced), priced from the
// Unpriced models panel and re-priced: the message says what they cost now, and the page's figures
// must say it too. Spend today stayed $0.00 (and the breakdown's row) until the page's next refresh
// of its figures, seconds later, beside a message saying the calls were now $3.00.
// The page's clock is paused after the first load, so no timed refresh can do it for the change.

const TOKEN = 'reprice-admin-token-0123456789ab'
const MODEL = 'gpt-7-preview'
const dash = useDashboard({
  config: { timezone: 'UTC', admin: { enabled: true, token: TOKEN } },
  adminToken: TOKEN,
  clock: true,
  before: async ({ t }) => {
    // 1,000,000 input and 0 output tokens each: $1.50 at $1.50 a million.
    for (let i = 0; i < 2; i++) t.server.ledger.record(makeCall({ ts: Date.now() - 60_000 + i, model: MODEL, input_tokens: 1_000_000, output_tokens: 0, cost_usd: 0, priced: false }))
    await t.server.ledger.flush()
  },
})

describe.skipIf(NO_BROWSER !== null)('past calls re-priced from the page', { timeout: 120_000 }, () => {
  it('show their new cost in the figures at once', async () => {
    const { page, t } = dash
    const today = page.getByTestId('card-today').locator('.value')
    const row = page.getByTestId('unpriced-row').filter({ hasText: MODEL })
    // Unpriced, the $0.00 says that its 2 calls have no price yet; re-priced, the mark is gone with them.
    await expect.poll(() => today.textContent()).toMatch(/^\s*\$0\.00 2 unpriced\s*$/)
    await expect.poll(() => row.getByTestId('set-price').count()).toBe(1)
    // From here on no timer fires: only the change itself may bring new figures.
    await page.clock.pauseAt(Date.now() + 1000)

    await row.getByLabel('input price').fill('1.5')
    await row.getByLabel('output price').fill('0')
    await row.getByTestId('set-price').click()
    await expect.poll(() => row.getByTestId('reprice').isEnabled()).toBe(true)
    await row.getByTestId('reprice').click()
    await expect.poll(() => page.getByTestId('price-message').textContent()).toMatch(/2 past calls re-priced, now \$3\.00/)
    expect((await request(`${t.url}/api/dashboard/summary`)).json().today_spend_usd).toBeCloseTo(3, 9)

    await expect.poll(() => today.textContent()).toMatch(/^\s*\$3\.00\s*$/)
    const model = page.getByTestId('breakdown-row').filter({ hasText: MODEL })
    await expect.poll(() => model.locator('.cost').textContent()).toMatch(/\$3\.00/)
    await expect.poll(() => page.getByTestId('unpriced-empty').count()).toBe(1)
  })
})
