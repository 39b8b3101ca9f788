import type { Page, Route } from 'playwright'
import { describe, expect, it } from 'vitest'
import { makeCall } from '../dashboard/seed'
import { NO_BROWSER } from '../e2e/browser'
import { useDashboard } from '../support/dashboard-page'
import { eventually } from '../support/http'

// A view whose last load failed shows the error in place of its figures. The error was the
// section's last one whatever filters it answered: after a tenant change, the new tenant's cost
// breakdown said the old tenant's failure ("The ledger could not be read.") while its own answer
// was on its way, for as long as that took (up to a minute), as if the new tenant's had failed.
// A view shows an error only for the filters in force; while their answer is on its way, its
// loading state. So does the unpriced models panel, which loads on its own.

const dash = useDashboard({
  before: async ({ t }) => {
    for (const tenant of ['acme', 'globex']) t.server.ledger.record(makeCall({ tenant, model: 'gpt-4o-mini', cost_usd: 0.01 }))
    await t.server.ledger.flush()
    await eventually(() => (t.server.db.prepare('SELECT count(*) FROM calls').pluck().get() as number) === 2)
  },
  path: '/?tenant=acme',
})

const unpricedOf = (tenant: string) => (u: URL) => u.pathname === '/api/dashboard/unpriced' && u.searchParams.get('tenant') === tenant
const FAILED = { status: 500, contentType: 'application/json', body: JSON.stringify({ error: { type: 'internal', message: 'The ledger could not be read.' } }) }

/** The breakdown's own request for `tenant` (grouped by model, the default). */
const breakdownOf = (tenant: string) => (u: URL) =>
  u.pathname === '/api/dashboard/costs' && u.searchParams.get('group_by') === 'model' && u.searchParams.get('tenant') === tenant

async function setTenant(page: Page, tenant: string) {
  await page.getByTestId('tenant').fill(tenant)
  await page.getByTestId('tenant').press('Enter')
}

describe.skipIf(NO_BROWSER !== null)("a view's error after a tenant change", { timeout: 120_000 }, () => {
  it("is not the old tenant's while the new tenant's answer is on its way", async () => {
    const { page } = dash
    const breakdown = page.locator('#breakdown')
    const error = breakdown.locator('.panel-error')
    await page.route(breakdownOf('acme'), (r: Route) => r.fulfill(FAILED))
    await expect.poll(() => error.textContent(), { timeout: 20_000 }).toContain('The ledger could not be read.')

    // globex's breakdown is held (and with it the round's other answers, shown together).
    let release: () => void = () => {}
    const held = new Promise<void>((r) => (release = r))
    let asked = 0
    await page.route(breakdownOf('globex'), async (r: Route) => {
      asked++
      await held
      await r.continue()
    })
    await setTenant(page, 'globex')
    await expect.poll(() => asked).toBeGreaterThanOrEqual(1)
    expect(await page.getByTestId('tenant-badge').textContent()).toContain('globex')
    expect(await error.count()).toBe(0)
    release()
    await expect.poll(() => breakdown.getByTestId('breakdown-row').count(), { timeout: 20_000 }).toBe(1)
    expect(await error.count()).toBe(0)
  })

  it("in the unpriced models panel: not the old tenant's while the new tenant's models are on their way", async () => {
    const { page } = dash
    const error = page.locator('#unpriced .panel-error')
    await setTenant(page, 'acme')
    await page.route(unpricedOf('acme'), (r: Route) => r.fulfill(FAILED))
    await expect.poll(() => error.textContent(), { timeout: 20_000 }).toContain('The ledger could not be read.')

    let release: () => void = () => {}
    const held = new Promise<void>((r) => (release = r))
    let asked = 0
    await page.route(unpricedOf('initech'), async (r: Route) => {
      asked++
      await held
      await r.continue()
    })
    await setTenant(page, 'initech')
    await expect.poll(() => asked).toBeGreaterThanOrEqual(1)
    expect(await error.count()).toBe(0)
    release()
    await expect.poll(() => page.getByTestId('unpriced-empty').count(), { timeout: 20_000 }).toBe(1)
    expect(await error.count()).toBe(0)
  })
})
