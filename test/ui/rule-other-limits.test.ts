import type { Page } from 'playwright'
import { describe, expect, it } from 'vitest'
import { NO_BROWSER, unlockAdmin } from '../e2e/browser'
import { useDashboard } from '../support/dashboard-page'
import { fixture } from '../support/fixtures'
import { postJson } from '../support/http'

// A rule may cap a key by the week, a rolling window of hours or a session (README: Budgets),
// with no daily or monthly limit. The page must not present such a rule as one without limits:
// the Budget rules panel and the API-key table name its limits.

const TOKEN = 'other-limits-admin-token-0123456789'
const KEY = 'sk-weekly-capped-000000000001'
const dash = useDashboard({
  config: {
    timezone: 'UTC',
    admin: { enabled: true, token: TOKEN },
    budgets: { rules: [{ api_key_pattern: 'sk-weekly-*', weekly_limit_usd: 60, window_hours: 5, window_limit_usd: 20, session_limit_usd: 3, action: 'block' }] },
  },
  responder: () => ({ status: 200, headers: { 'content-type': 'application/json' }, body: fixture('openai-chat/chat-nonstream-cached.json') }),
  before: async ({ t }) => {
    const res = await postJson(`${t.url}/v1/chat/completions`, { model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] }, { authorization: `Bearer ${KEY}` })
    expect(res.status).toBe(200)
  },
  loaded: (page) => unlockAdmin(page, TOKEN),
})

const text = async (l: ReturnType<Page['locator']>) => ((await l.textContent()) ?? '').replace(/\s+/g, ' ')

describe.skipIf(NO_BROWSER !== null)('a rule with weekly, window and session limits only', { timeout: 120_000 }, () => {
  it('names those limits in the API-key table and the Budget rules panel', async () => {
    const { page } = dash
    const keyRule = page.getByTestId('key-row').first().locator('.rule')
    await expect.poll(() => text(keyRule)).toContain('sk-weekly-*')
    expect(await text(keyRule)).toContain('$60.00/week · $20.00 per 5 h · $3.00/session · block')
    const row = page.locator('#rules [data-testid="rule-row"]').first()
    await expect.poll(() => text(row)).toContain('sk-weekly-*')
    expect(await text(row)).toContain('$60.00/week · $20.00 per 5 h · $3.00/session')
  })

  it('lists the session limit in Budgets and forecast, after the week and the window, as never resetting', async () => {
    const { page } = dash
    const rows = page.locator('#budget-forecast [data-testid="budget-window"]')
    await expect.poll(() => rows.count()).toBe(3)
    expect(await text(rows.nth(0))).toContain('weekly')
    expect(await text(rows.nth(1))).toContain('5 h window')
    // The key's call: the session Burnrate inferred for it (no X-Burnrate-Session), which never resets.
    const session = await text(rows.nth(2))
    expect(session).toMatch(/^session\$0\.\d+ \/ \$3\.00/)
    expect(session).toMatch(/never \(session auto-[0-9a-f]+\)$/)
  })
})
