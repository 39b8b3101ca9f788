import type { Page } from 'playwright'
import { describe, expect, it } from 'vitest'
import { makeCall } from '../dashboard/seed'
import { NO_BROWSER } from '../e2e/browser'
import { useDashboard } from '../support/dashboard-page'
import { eventually } from '../support/http'

// The cost breakdown and the sessions list show their first 100 rows, and up to 1,000 once the
// user asks. The longer list was kept after a filter change: a new range, grouping, tenant or
// member opened at up to 1,000 rows though nobody had asked for more of it. A list starts again at
// 100 rows when a filter it answers changes (the breakdown: any; the sessions: the tenant, the
// only one they answer), and shows the new filter's rows.

const N = 150

const dash = useDashboard({
  before: async ({ t }) => {
    const now = Date.now()
    for (const tenant of ['acme', 'globex']) {
      for (let i = 0; i < N; i++) {
        t.server.ledger.record(makeCall({ ts: now - 3_600_000 + i * 1000, tenant, session: `${tenant}-${i}`, agent: 'codex', cost_usd: 0.001 + i * 1e-6 }))
      }
    }
    await t.server.ledger.flush()
    await eventually(() => (t.server.db.prepare('SELECT count(*) FROM calls').pluck().get() as number) === 2 * N)
  },
  path: '/?tenant=acme&group=session&range=24h',
})

const breakdownKeys = (page: Page) => page.getByTestId('breakdown-row').locator('td.key').allTextContents()
const sessionRows = (page: Page) => page.getByTestId('session-row').locator('td.key').allTextContents()

async function setTenant(page: Page, tenant: string) {
  await page.getByTestId('tenant').fill(tenant)
  await page.getByTestId('tenant').press('Enter')
}

describe.skipIf(NO_BROWSER !== null)('"show more" after a filter change', { timeout: 120_000 }, () => {
  it('starts each list again at 100 rows when a filter it answers changes, with the new filter\'s rows', async () => {
    const { page } = dash
    await expect.poll(() => page.getByTestId('breakdown-row').count(), { timeout: 30_000 }).toBe(101)
    await page.getByTestId('breakdown-more').click()
    await expect.poll(() => page.getByTestId('breakdown-row').count(), { timeout: 30_000 }).toBe(N)
    await page.getByRole('button', { name: 'Show 100 sessions' }).click()
    await page.getByTestId('sessions-more').click()
    await expect.poll(async () => (await sessionRows(page)).length, { timeout: 30_000 }).toBe(N)

    // A new range: the breakdown is 100 rows and the (other) row again; the sessions, which do not
    // answer the range, keep the 150 the user asked for.
    await page.getByTestId('range').locator('[data-range="7d"]').click()
    await expect.poll(() => page.getByTestId('breakdown-table').getAttribute('data-group'), { timeout: 30_000 }).toBe('session')
    await expect.poll(() => page.getByTestId('breakdown-other').count(), { timeout: 30_000 }).toBe(1)
    expect(await page.getByTestId('breakdown-row').count()).toBe(101)
    await expect.poll(async () => (await sessionRows(page)).length, { timeout: 30_000 }).toBe(N)
    expect(await page.getByTestId('breakdown-more').textContent()).toContain(`of ${N}`)

    // Asked longer again, then a new tenant: both lists are globex's first 100 rows.
    await page.getByTestId('breakdown-more').click()
    await expect.poll(() => page.getByTestId('breakdown-row').count(), { timeout: 30_000 }).toBe(N)
    await setTenant(page, 'globex')
    await expect.poll(() => page.getByTestId('sessions-count').textContent(), { timeout: 30_000 }).toContain(`100 most recent of ${N}`)
    await expect.poll(() => page.getByTestId('breakdown-other').count(), { timeout: 30_000 }).toBe(1)
    const keys = await breakdownKeys(page)
    expect(keys).toHaveLength(101)
    expect(keys.filter((k) => k.startsWith('globex-'))).toHaveLength(100)
    expect(keys.some((k) => k.startsWith('acme-'))).toBe(false)
    const sessions = await sessionRows(page)
    expect(sessions).toHaveLength(100)
    expect(sessions.every((s) => s.startsWith('globex-'))).toBe(true)
    // The 100 most recent: globex-149 down to globex-50.
    expect(sessions[0]).toContain('globex-149')
    expect(sessions.at(-1)).toContain('globex-50')
  })
})
