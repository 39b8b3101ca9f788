import type { Route } from 'playwright'
import { describe, expect, it } from 'vitest'
import { makeCall } from '../dashboard/seed'
import { NO_BROWSER } from '../e2e/browser'
import { useDashboard } from '../support/dashboard-page'

// The page refreshes every section in rounds, a round once every section has answered. One
// request the server never answers (a hung process, a connection dropped without a word across a
// laptop's sleep or a network change) held that round, and so every later one, for good: the
// page showed its last figures under "Live" however much was spent since, until reloaded.
// The page's clock is driven by the test; the summary request of one refresh is never answered.

const held: Route[] = []
let hang = false

const dash = useDashboard({
  clock: true,
  before: async ({ t }) => {
    t.server.ledger.record(makeCall({ cost_usd: 0.5 }))
    await t.server.ledger.flush()
  },
  beforeLoad: (page) =>
    page.route(/\/api\/dashboard\/summary(\?|$)/, (route) => {
      if (!hang) return void route.continue()
      hang = false
      held.push(route)
    }),
  after: async () => {
    for (const r of held) await r.abort().catch(() => {})
  },
})

describe.skipIf(NO_BROWSER !== null)('a refresh the server never answers', { timeout: 120_000 }, () => {
  it('does not stop the page from refreshing', async () => {
    const { page, t } = dash
    const today = page.getByTestId('card-today').locator('.value')
    await expect.poll(() => today.textContent()).toBe('$0.50')
    await page.clock.pauseAt(Date.now() + 500)
    hang = true
    // The next refresh's summary request is never answered.
    await expect.poll(async () => {
      await page.clock.runFor(1000)
      return held.length
    }).toBe(1)
    t.server.ledger.record(makeCall({ cost_usd: 1 }))
    await t.server.ledger.flush()
    // A few minutes go by, a refresh due every 5 seconds: the new spend shows.
    await expect.poll(async () => {
      await page.clock.runFor(5000)
      return today.textContent()
    }, { timeout: 60_000 }).toBe('$1.50')
    expect(held.length).toBe(1)
  })
})
