import type { Route } from 'playwright'
import { describe, expect, it } from 'vitest'
import { NO_BROWSER, unlockAdmin } from '../e2e/browser'
import { useDashboard } from '../support/dashboard-page'

// While unlocked, the Budget rules panel reloads the rules and keys after every refresh of the
// page (every 5 s). On a slow admin API: one load on the way at a time, not one more per refresh;
// and Lock is not undone by the answer to a load that was on its way when it was clicked.

const TOKEN = 'slow-admin-token-0123456789abcdef'
const held: Route[] = []
let holding = false
let rounds = 0

const dash = useDashboard({
  config: { timezone: 'UTC', admin: { enabled: true, token: TOKEN } },
  loaded: async (page) => {
    // A slow admin API: with `holding`, its key list reaches the server only when the test lets it.
    await page.route(/\/api\/admin\/api-keys(\?|$)/, (route) => (holding ? held.push(route) : route.continue()))
    page.on('requestfinished', (r) => {
      if (new URL(r.url()).pathname === '/api/dashboard/summary') rounds++
    })
    await unlockAdmin(page, TOKEN)
  },
})

describe.skipIf(NO_BROWSER !== null)('the admin panel on a slow admin API', { timeout: 120_000 }, () => {
  it('keeps one load on the way, and stays locked once locked', async () => {
    const { page } = dash
    await expect.poll(() => page.getByTestId('new-rule').count()).toBe(1)
    holding = true
    const from = rounds
    await expect.poll(() => held.length, { timeout: 30_000 }).toBe(1)
    // Three more refreshes of the page while that load waits.
    await expect.poll(() => rounds - from, { timeout: 60_000 }).toBeGreaterThanOrEqual(4)
    expect(held.length).toBe(1)
    await page.locator('#rules').getByRole('button', { name: 'Lock' }).click()
    await expect.poll(() => page.getByTestId('admin-unlock').count()).toBe(1)
    holding = false
    for (const r of held.splice(0)) await r.continue()
    await page.waitForLoadState('networkidle')
    expect(await page.getByTestId('admin-unlock').count()).toBe(1)
    expect(await page.getByTestId('new-rule').count()).toBe(0)
  })
})
