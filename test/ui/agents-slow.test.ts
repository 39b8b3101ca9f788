import type { Route } from 'playwright'
import { describe, expect, it } from 'vitest'
import { NO_BROWSER, unlockAdmin } from '../e2e/browser'
import { useDashboard } from '../support/dashboard-page'

// Unlocked, the Connect panel's agent switches reload /api/admin/agents every 5 s. On a slow
// server (it reads each agent's config files): one request on its way at a time, not one more
// every 5 s.

const TOKEN = 'slow-agents-token-0123456789abcdef'
const held: Route[] = []
let holding = false
let rounds = 0

const dash = useDashboard({
  config: { timezone: 'UTC', admin: { enabled: true, token: TOKEN } },
  loaded: async (page) => {
    await page.route(/\/api\/admin\/agents(\?|$)/, (route) => (holding ? held.push(route) : route.continue()))
    page.on('requestfinished', (r) => {
      if (new URL(r.url()).pathname === '/api/dashboard/summary') rounds++
    })
    await unlockAdmin(page, TOKEN)
  },
})

describe.skipIf(NO_BROWSER !== null)('agent switches on a slow server', { timeout: 120_000 }, () => {
  it('keep one request on its way at a time', async () => {
    const { page } = dash
    await expect.poll(() => page.getByTestId('new-rule').count()).toBe(1)
    holding = true
    await expect.poll(() => held.length, { timeout: 30_000 }).toBe(1)
    // At least 15 s (four page refreshes, 5 s apart) with that request still waiting.
    const from = rounds
    await expect.poll(() => rounds - from, { timeout: 60_000 }).toBeGreaterThanOrEqual(4)
    expect(held.length).toBe(1)
    holding = false
    for (const r of held.splice(0)) await r.continue()
  })
})
