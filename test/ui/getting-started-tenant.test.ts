import type { Page, Route } from 'playwright'
import { describe, expect, it } from 'vitest'
import { makeCall } from '../dashboard/seed'
import { NO_BROWSER } from '../e2e/browser'
import { useDashboard } from '../support/dashboard-page'
import { eventually } from '../support/http'

// The getting-started panel ("No calls for tenant … yet") read the store's last cost breakdown and
// sessions whatever filters they answered: after a tenant change whose breakdown load failed, the
// old tenant's rows stayed in the store, and the panel stayed hidden over a tenant with no call in
// the last 30 days (the summary, the sessions and the 30-day look-up all said so). It reads the
// answers for the filters in force; the 30-day look-up covers every range and the sessions' 24 h,
// so a breakdown that failed leaves nothing it could add.

const dash = useDashboard({
  before: async ({ t }) => {
    t.server.ledger.record(makeCall({ tenant: 'acme', model: 'gpt-4o-mini', cost_usd: 0.01 }))
    await t.server.ledger.flush()
    await eventually(() => (t.server.db.prepare('SELECT count(*) FROM calls').pluck().get() as number) === 1)
  },
  path: '/?tenant=acme',
})

/** The breakdown's own request for `tenant` (grouped by model, the default): not the 30-day look-up, nor the provider chart's. */
const breakdownOf = (tenant: string) => (u: URL) =>
  u.pathname === '/api/dashboard/costs' && u.searchParams.get('group_by') === 'model' && u.searchParams.get('tenant') === tenant

async function setTenant(page: Page, tenant: string) {
  await page.getByTestId('tenant').fill(tenant)
  await page.getByTestId('tenant').press('Enter')
}

describe.skipIf(NO_BROWSER !== null)('the getting-started panel after a tenant change', { timeout: 120_000 }, () => {
  it("shows for a tenant with no call whose breakdown load failed, not hidden by the old tenant's rows", async () => {
    const { page } = dash
    const breakdown = page.locator('#breakdown')
    await expect.poll(() => breakdown.getByTestId('breakdown-row').count(), { timeout: 20_000 }).toBe(1)
    expect(await page.getByTestId('getting-started').count()).toBe(0)

    let asked = 0
    await page.route(breakdownOf('nobody'), (r: Route) => {
      asked++
      return r.fulfill({ status: 500, contentType: 'application/json', body: JSON.stringify({ error: { type: 'internal', message: 'The ledger could not be read.' } }) })
    })
    await setTenant(page, 'nobody')
    await expect.poll(() => breakdown.locator('.panel-error').textContent(), { timeout: 20_000 }).toContain('The ledger could not be read.')
    expect(asked).toBeGreaterThanOrEqual(1)
    await expect.poll(() => page.getByTestId('getting-started').count(), { timeout: 20_000 }).toBe(1)
    expect(await page.getByTestId('getting-started').innerText()).toContain('No calls for tenant “nobody” yet')

    // Back to acme (its breakdown answers): the panel goes.
    await page.unroute(breakdownOf('nobody'))
    await setTenant(page, 'acme')
    await expect.poll(() => breakdown.getByTestId('breakdown-row').count(), { timeout: 20_000 }).toBe(1)
    expect(await page.getByTestId('getting-started').count()).toBe(0)
  })
})
