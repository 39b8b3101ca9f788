import { describe, expect, it } from 'vitest'
import { makeCall } from '../dashboard/seed'
import { NO_BROWSER } from '../e2e/browser'
import { useDashboard } from '../support/dashboard-page'
import { postJson } from '../support/http'

// Controls repeated on every row must say which row they are for, to a screen reader that lists
// them (a form-field or landmark list) or reaches one by Tab: each unpriced model's price fields
// were all "input price" and "output price", and every budget bar "daily spend" or "monthly
// spend", whichever model, rule or key they belonged to.

const TOKEN = 'row-names-admin-token-0123456789'
const dash = useDashboard({
  config: {
    timezone: 'UTC',
    admin: { enabled: true, token: TOKEN },
    budgets: { rules: [{ api_key_pattern: 'sk-a-*', daily_limit_usd: 5, monthly_limit_usd: 50, action: 'block' }, { api_key_pattern: 'sk-b-*', daily_limit_usd: 7, action: 'warn' }] },
  },
  adminToken: TOKEN,
  before: async ({ t }) => {
    for (const model of ['mystery-one', 'mystery-two']) t.server.ledger.record(makeCall({ ts: Date.now() - 60_000, model, cost_usd: 0, priced: false }))
    await t.server.ledger.flush()
    expect((await postJson(`${t.url}/api/admin/budgets/rules`, { api_key_pattern: 'sk-c-*', daily_limit_usd: 3, action: 'block' }, { authorization: `Bearer ${TOKEN}` })).status).toBe(201)
  },
})

/** The accessible names of `role` within `scope`. */
async function names(scope: string, role: 'textbox' | 'progressbar'): Promise<string[]> {
  const snapshot = await dash.page.locator(scope).ariaSnapshot()
  return [...snapshot.matchAll(new RegExp(`- ${role} "([^"]*)"`, 'g'))].map((m) => m[1])
}

describe.skipIf(NO_BROWSER !== null)('controls repeated on each row', { timeout: 120_000 }, () => {
  it("name their model in the unpriced models' price fields", async () => {
    const { page } = dash
    await expect.poll(() => page.getByTestId('unpriced-row').getByTestId('set-price').count()).toBe(2)
    expect((await names('#unpriced', 'textbox')).sort()).toEqual([
      'Input price of mystery-one (USD per million tokens)',
      'Input price of mystery-two (USD per million tokens)',
      'Output price of mystery-one (USD per million tokens)',
      'Output price of mystery-two (USD per million tokens)',
    ])
  })

  it('name their rule on the budget bars', async () => {
    const { page } = dash
    await expect.poll(() => page.locator('#rules [data-testid="rule-row"]').count()).toBe(3)
    await expect.poll(async () => (await names('#rules', 'progressbar')).length).toBe(4)
    expect((await names('#rules', 'progressbar')).sort()).toEqual(['sk-a-* daily spend', 'sk-a-* monthly spend', 'sk-b-* daily spend', 'sk-c-* daily spend'])
    expect((await names('#budget-forecast', 'progressbar')).sort()).toEqual(['sk-a-* daily spend', 'sk-a-* monthly spend', 'sk-b-* daily spend', 'sk-c-* daily spend'])
    const all = [...(await names('#rules', 'progressbar')), ...(await names('#budget-forecast', 'progressbar'))]
    expect(all.every((n) => /^sk-[abc]-\* (daily|monthly) spend$/.test(n))).toBe(true)
  })
})
