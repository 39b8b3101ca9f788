import { describe, expect, it } from 'vitest'
import { NO_BROWSER, unlockAdmin } from '../e2e/browser'
import { useDashboard } from '../support/dashboard-page'
import { postJson, request } from '../support/http'
import { chatPromptAnswer } from '../support/mock-upstream'

// The rule form sets a pattern's daily and monthly limits, action and warn-at. Saved for a pattern
// that already has a rule (made with the admin API or the CLI, or in the config file), it replaced
// that rule with one of the form's fields only, and without a word: the weekly, window and session
// limits, the agent scope, the per-minute limits, the alert points and the reserve mode the user
// had set were gone. The form must say a rule for the pattern exists, and keep what it does not show.

const TOKEN = 'rule-form-replace-admin-token-0123456789'
const admin = { authorization: `Bearer ${TOKEN}` }
const OTHER = {
  weekly_limit_usd: 30,
  window_hours: 5,
  window_limit_usd: 10,
  session_limit_usd: 2,
  agent: 'claude-code',
  model_pattern: 'gpt-4o*',
  requests_per_minute: 60,
  tokens_per_minute: 100000,
  alert_at_pct: [0.5, 0.9],
  reserve: 'max_tokens',
}
const dash = useDashboard({
  config: {
    timezone: 'UTC',
    admin: { enabled: true, token: TOKEN },
    budgets: { rules: [{ api_key_pattern: 'sk-cfg-*', daily_limit_usd: 1, session_limit_usd: 4, provider: 'openai', action: 'warn' }] },
  },
  responder: chatPromptAnswer(1000),
  before: async ({ t }) => {
    const res = await postJson(`${t.url}/api/admin/budgets/rules`, { api_key_pattern: 'sk-team-*', daily_limit_usd: 5, action: 'block', soft_limit_pct: 0.7, ...OTHER }, admin)
    expect(res.status).toBe(201)
  },
  loaded: (page) => unlockAdmin(page, TOKEN),
})

const stored = async (pattern: string, source = 'runtime') =>
  ((await request(`${dash.t.url}/api/admin/budgets/rules`, { headers: admin })).json() as { api_key_pattern: string; source: string }[]).find(
    (r) => r.api_key_pattern === pattern && r.source === source,
  )

describe.skipIf(NO_BROWSER !== null)('the rule form on a pattern that already has a rule', { timeout: 120_000 }, () => {
  it('says the rule exists, and saving keeps the settings the form does not show', async () => {
    const { page } = dash
    const rules = page.locator('#rules')
    await expect.poll(() => rules.locator('[data-testid="rule-row"][data-pattern="sk-team-*"]').count()).toBe(1)
    await rules.getByTestId('new-rule').click()
    await rules.locator('#rf-pattern').fill('sk-team-*')
    const note = rules.getByTestId('rule-exists')
    await expect.poll(async () => ((await note.count()) ? await note.textContent() : '')).toMatch(/already has a rule/)
    const text = ((await note.textContent()) ?? '').replace(/\s+/g, ' ')
    expect(text).toContain('$30.00/week')
    expect(text).toContain('agent claude-code')
    await rules.locator('#rf-daily').fill('7')
    await rules.getByRole('button', { name: 'Save rule' }).click()
    await expect.poll(() => rules.getByTestId('rule-form').count()).toBe(0)
    expect(await stored('sk-team-*')).toMatchObject({ daily_limit_usd: 7, monthly_limit_usd: null, action: 'block', soft_limit_pct: null, ...OTHER })
  })

  it('keeps a config rule’s other settings in the runtime rule that replaces it', async () => {
    const { page } = dash
    const rules = page.locator('#rules')
    await rules.getByTestId('new-rule').click()
    await rules.locator('#rf-pattern').fill('sk-cfg-*')
    await expect.poll(async () => ((await rules.getByTestId('rule-exists').count()) ? await rules.getByTestId('rule-exists').textContent() : '')).toMatch(
      /config file/,
    )
    await rules.locator('#rf-monthly').fill('20')
    await rules.getByRole('button', { name: 'Save rule' }).click()
    await expect.poll(() => rules.getByTestId('rule-form').count()).toBe(0)
    expect(await stored('sk-cfg-*')).toMatchObject({ daily_limit_usd: null, monthly_limit_usd: 20, action: 'block', session_limit_usd: 4, provider: 'openai' })
  })

  it('says nothing of the kind for a new pattern', async () => {
    const { page } = dash
    const rules = page.locator('#rules')
    await rules.getByTestId('new-rule').click()
    await rules.locator('#rf-pattern').fill('sk-new-*')
    await rules.locator('#rf-daily').fill('3')
    expect(await rules.getByTestId('rule-exists').count()).toBe(0)
    await rules.getByRole('button', { name: 'Save rule' }).click()
    await expect.poll(() => rules.getByTestId('rule-form').count()).toBe(0)
    expect(await stored('sk-new-*')).toMatchObject({ daily_limit_usd: 3, weekly_limit_usd: null, agent: null, reserve: 'expected' })
  })
})
