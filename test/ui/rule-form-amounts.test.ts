import { describe, expect, it } from 'vitest'
import { NO_BROWSER, unlockAdmin } from '../e2e/browser'
import { useDashboard } from '../support/dashboard-page'
import { request } from '../support/http'
import { chatPromptAnswer } from '../support/mock-upstream'

// The rule form read its limits with Number(): "0x10" was saved as a $16 limit and "1e3" as $1,000,
// while "$1,250.75", as the dashboard writes amounts, was refused. Against the built dashboard and a
// real server: those are refused under the form with nothing stored, and plain amounts are stored as typed.

const TOKEN = 'rule-form-amounts-admin-token-0123456789'
const admin = { authorization: `Bearer ${TOKEN}` }
const dash = useDashboard({
  config: { timezone: 'UTC', admin: { enabled: true, token: TOKEN } },
  responder: chatPromptAnswer(1000),
  loaded: (page) => unlockAdmin(page, TOKEN),
})

const rules = async () => (await request(`${dash.t.url}/api/admin/budgets/rules`, { headers: admin })).json() as { api_key_pattern: string; daily_limit_usd: number | null; monthly_limit_usd: number | null }[]

describe.skipIf(NO_BROWSER !== null)('the rule form’s amounts', { timeout: 120_000 }, () => {
  it('refuses a limit in hex or exponent form, and stores a plain or grouped dollar amount as typed', async () => {
    const { page } = dash
    const panel = page.locator('#rules')
    await panel.getByTestId('new-rule').click()
    await panel.locator('#rf-pattern').fill('sk-amounts-*')
    for (const typed of ['0x10', '1e3']) {
      await panel.locator('#rf-daily').fill(typed)
      await panel.getByRole('button', { name: 'Save rule' }).click()
      await expect.poll(async () => ((await panel.getByTestId('rule-error').count()) ? await panel.getByTestId('rule-error').textContent() : '')).toContain(`not "${typed}"`)
    }
    expect(await rules()).toEqual([])
    await panel.locator('#rf-daily').fill('   ')
    await panel.locator('#rf-monthly').fill('$1,250.75')
    await panel.getByRole('button', { name: 'Save rule' }).click()
    await expect.poll(() => panel.getByTestId('rule-form').count()).toBe(0)
    expect(await rules()).toMatchObject([{ api_key_pattern: 'sk-amounts-*', daily_limit_usd: null, monthly_limit_usd: 1250.75 }])
  })
})
