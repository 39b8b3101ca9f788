import { describe, expect, it } from 'vitest'
import { NO_BROWSER, unlockAdmin } from '../e2e/browser'
import { useDashboard } from '../support/dashboard-page'
import { fixture } from '../support/fixtures'
import { postJson, request } from '../support/http'

// A block rule that counts one agent's calls only (README: Budgets, `agent`), on a key whose spend
// today comes from another agent: the page judges the rule by its own window, not the key's day.

const TOKEN = 'scoped-admin-token-0123456789abcdef'
const KEY = 'sk-scoped-filtered-000000000001'

const call = (agent: string) =>
  postJson(`${dash.t.url}/v1/chat/completions`, { model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] }, { authorization: `Bearer ${KEY}`, 'x-burnrate-agent': agent })
const budgets = async () => JSON.parse((await request(`${dash.t.url}/api/dashboard/budgets`)).text)

const dash = useDashboard({
  config: {
    timezone: 'UTC',
    admin: { enabled: true, token: TOKEN },
    budgets: { rules: [{ api_key_pattern: 'sk-scoped-*', agent: 'claude-code', daily_limit_usd: 0.000001, action: 'block' }] },
  },
  responder: () => ({ status: 200, headers: { 'content-type': 'application/json' }, body: fixture('openai-chat/chat-nonstream-cached.json') }),
  before: async () => {
    for (let i = 0; i < 3; i++) expect((await call('aider')).status).toBe(200)
  },
  loaded: (page) => unlockAdmin(page, TOKEN),
})

describe.skipIf(NO_BROWSER !== null)('a budget rule scoped to one agent', { timeout: 120_000 }, () => {
  it("shows the rule's own spend, and no alert until the rule itself is over", async () => {
    const { page } = dash
    expect((await budgets()).rules[0].windows[0].spent_usd).toBe(0)
    const row = page.locator('#rules [data-testid="rule-row"]').first()
    const daily = row.getByTestId('rule-daily')
    // The key spent under aider only: the rule's bar reads $0 of its limit, not the key's day.
    await expect.poll(() => daily.textContent()).toMatch(/\$0\.00\s*\/\s*\$0\.000001\s*0%/)
    // The API-key table says the rule counts claude-code's calls only.
    await expect.poll(() => page.getByTestId('key-row').first().textContent()).toContain('agent claude-code only')
    // The alerts read the same loaded figures as that bar: none.
    expect(await page.getByTestId('budget-alerts').count()).toBe(0)

    // A claude-code call passes (the rule had counted nothing) and takes the rule past its limit:
    // now the rule's own window is over, and the page says its claude-code calls are refused.
    expect((await call('claude-code')).status).toBe(200)
    expect((await budgets()).rules[0].windows[0].pct).toBeGreaterThanOrEqual(1)
    await expect.poll(() => page.getByTestId('budget-alerts').textContent()).toMatch(/blocked.*under sk-scoped-\*: its calls \(agent claude-code\) are refused/)
    expect((await call('claude-code')).status).toBe(429)
    expect((await call('aider')).status).toBe(200)
  })
})
