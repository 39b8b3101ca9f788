import { describe, expect, it } from 'vitest'
import { makeCall } from '../dashboard/seed'
import { NO_BROWSER } from '../e2e/browser'
import { useDashboard } from '../support/dashboard-page'

// One session id carried by two agents (README: active sessions count "each session id once,
// however many agents or tenants carried it"): the card and the sessions panel agree.

const dash = useDashboard({
  before: ({ t }) => {
    t.server.ledger.record(makeCall({ ts: Date.now() - 30_000, agent: 'planner', session: 'job-42' }))
    t.server.ledger.record(makeCall({ ts: Date.now() - 20_000, agent: 'coder', session: 'job-42' }))
    t.server.ledger.flush()
  },
})

describe.skipIf(NO_BROWSER !== null)('active sessions', { timeout: 120_000 }, () => {
  it('counts the same active sessions on the card and in the sessions panel', async () => {
    const { page } = dash
    await expect.poll(() => page.getByTestId('card-sessions').locator('.value').textContent()).toBe('1')
    await expect.poll(() => page.getByTestId('session-row').count()).toBe(2)
    const sub = page.locator('#sessions .sub')
    await expect.poll(() => sub.textContent()).toBe('1 active session now; 2 rows (one per tenant, agent and session) with a call in the last 24 hours')
  })
})
