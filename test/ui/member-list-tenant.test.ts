import type { Page, Route } from 'playwright'
import { describe, expect, it } from 'vitest'
import { makeCall } from '../dashboard/seed'
import { NO_BROWSER } from '../e2e/browser'
import { useDashboard } from '../support/dashboard-page'
import { eventually } from '../support/http'

// The cost breakdown's member filter (a team server's) lists the members that sent calls for the
// filters in force. It read the store's last members answer whatever filters that answered: after a
// tenant change it kept listing the old tenant's members while the new tenant's answer was on its
// way, and for good when that answer failed, so a user could pick a member who sent the new tenant
// nothing. It lists only the members of the range and tenant in force.

const dash = useDashboard({
  before: async ({ t }) => {
    for (const [tenant, member] of [['acme', 'alice'], ['acme', 'bob'], ['globex', 'carol'], ['globex', 'dave']]) {
      t.server.ledger.record(makeCall({ tenant, member, model: 'gpt-4o-mini', cost_usd: 0.01 }))
    }
    await t.server.ledger.flush()
    await eventually(() => (t.server.db.prepare('SELECT count(*) FROM calls').pluck().get() as number) === 4)
  },
  path: '/?tenant=acme',
})

const options = (page: Page) => page.locator('[data-testid="member-filter"] option').allTextContents()
const membersOf = (tenant: string) => (u: URL) =>
  u.pathname === '/api/dashboard/costs' && u.searchParams.get('group_by') === 'member' && u.searchParams.get('tenant') === tenant

async function setTenant(page: Page, tenant: string) {
  await page.getByTestId('tenant').fill(tenant)
  await page.getByTestId('tenant').press('Enter')
}

describe.skipIf(NO_BROWSER !== null)("the member filter after a tenant change", { timeout: 120_000 }, () => {
  it("does not list the old tenant's members while the new tenant's are on the way, nor after their load failed", async () => {
    const { page } = dash
    await expect.poll(() => options(page), { timeout: 20_000 }).toEqual(['All members', 'alice', 'bob'])

    // globex's member list is held (and with it the round's other answers, shown together).
    let release: () => void = () => {}
    const held = new Promise<void>((r) => (release = r))
    let asked = 0
    await page.route(membersOf('globex'), async (r: Route) => {
      asked++
      await held
      await r.continue()
    })
    await setTenant(page, 'globex')
    await expect.poll(() => asked).toBeGreaterThanOrEqual(1)
    expect(await page.getByTestId('tenant-badge').textContent()).toContain('globex')
    expect(await options(page)).not.toContain('alice')
    expect(await options(page)).not.toContain('bob')
    release()
    await expect.poll(() => options(page), { timeout: 20_000 }).toEqual(['All members', 'carol', 'dave'])
    await page.unroute(membersOf('globex'))

    // acme's member list fails: globex's members are not offered under acme.
    await page.route(membersOf('acme'), (r: Route) =>
      r.fulfill({ status: 500, contentType: 'application/json', body: JSON.stringify({ error: { type: 'internal', message: 'The ledger could not be read.' } }) }),
    )
    let round = 0
    page.on('request', (req) => {
      const u = new URL(req.url())
      if (membersOf('acme')(u)) round++
    })
    await setTenant(page, 'acme')
    await expect.poll(() => round).toBeGreaterThanOrEqual(2)
    expect(await options(page)).not.toContain('carol')
    expect(await options(page)).not.toContain('dave')
  })
})
