import { describe, expect, it } from 'vitest'
import { NO_BROWSER, unlockAdmin } from '../e2e/browser'
import { useDashboard } from '../support/dashboard-page'
import { fixture } from '../support/fixtures'
import { postJson } from '../support/http'

// The API-key table names each key's effective rule with its limits. A limit is a budget figure:
// printed in full, as the budget bars print it, never the compact `$1k` a $1,049 limit rounds to.

const TOKEN = 'limits-admin-token-0123456789abcdef'
const KEY = 'sk-limits-shown-000000000001'
const dash = useDashboard({
  config: {
    timezone: 'UTC',
    admin: { enabled: true, token: TOKEN },
    budgets: { rules: [{ api_key_pattern: 'sk-limits-*', daily_limit_usd: 1049.5, monthly_limit_usd: 25_049, action: 'warn' }] },
  },
  responder: () => ({ status: 200, headers: { 'content-type': 'application/json' }, body: fixture('openai-chat/chat-nonstream-cached.json') }),
  before: async ({ t }) => {
    const res = await postJson(`${t.url}/v1/chat/completions`, { model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] }, { authorization: `Bearer ${KEY}` })
    expect(res.status).toBe(200)
  },
  loaded: (page) => unlockAdmin(page, TOKEN),
})

describe.skipIf(NO_BROWSER !== null)("a key's effective rule", { timeout: 120_000 }, () => {
  it('shows its limits in full dollars', async () => {
    const { page } = dash
    const rule = page.getByTestId('key-row').first().locator('.rule')
    await expect.poll(() => rule.textContent()).toContain('sk-limits-*')
    expect((await rule.textContent())!.replace(/\s+/g, ' ')).toContain('$1,049.50/day · $25,049.00/mo · warn')
  })
})
