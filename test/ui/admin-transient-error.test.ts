import { describe, expect, it } from 'vitest'
import { makeCall } from '../dashboard/seed'
import { NO_BROWSER, unlockAdmin } from '../e2e/browser'
import { useDashboard } from '../support/dashboard-page'

// The admin panel unlocked; one refresh of /api/admin/api-keys answers 503 (what the server sends
// at server.max_connections), then the route is healthy again: the panel stays unlocked.

const TOKEN = 'transient-admin-token-0123456789abcdef'
const dash = useDashboard({
  config: { timezone: 'UTC', admin: { enabled: true, token: TOKEN }, budgets: { rules: [{ api_key_pattern: '*', daily_limit_usd: 5, action: 'block' }] } },
  before: ({ t }) => {
    t.server.ledger.record(makeCall({ cost_usd: 1 }))
    t.server.ledger.flush()
  },
  loaded: (page) => unlockAdmin(page, TOKEN),
})

describe.skipIf(NO_BROWSER !== null)('the admin panel after a failed refresh', { timeout: 120_000 }, () => {
  it('stays unlocked, says what failed, and clears it once the admin API answers again', async () => {
    const { page } = dash
    const rules = page.locator('#rules')
    const rows = rules.getByTestId('rule-row')
    await expect.poll(() => rows.count()).toBe(1)
    let failed = 0
    await page.route('**/api/admin/api-keys', (r) => {
      failed++
      return r.fulfill({ status: 503, contentType: 'application/json', body: JSON.stringify({ error: { type: 'service_unavailable', message: 'Busy, try again.' } }) })
    })
    await expect.poll(() => rules.innerText()).toContain('Busy, try again.')
    expect(failed).toBeGreaterThan(0)
    expect(await rows.count()).toBe(1)
    expect(await rules.getByTestId('admin-token').count()).toBe(0)
    await page.unroute('**/api/admin/api-keys')
    // The next refresh loads again by itself, with the token still in the tab.
    await page.waitForResponse((r) => r.url().endsWith('/api/admin/api-keys') && r.status() === 200)
    await expect.poll(() => rules.innerText()).not.toContain('Busy, try again.')
    expect(await rows.count()).toBe(1)
    expect(await rules.getByTestId('admin-token').count()).toBe(0)
  })
})
