import { describe, expect, it } from 'vitest'
import { type Receiver, receiver } from '../alerts/support'
import { NO_BROWSER } from '../e2e/browser'
import { useDashboard } from '../support/dashboard-page'
import { eventually, postJson, request } from '../support/http'
import { chatPromptAnswer } from '../support/mock-upstream'

// A session spending faster than runaway.spend_rate.usd_per_minute is sent to the webhooks as
// `runaway.spend_rate`, and a budget threshold crossed as `budget.threshold`. The Alert deliveries
// panel named every delivery but a test one "threshold": a runaway session's alert read as a
// budget's. Each $0.10 call is 1,000 input tokens of a model priced at $100 a million.

const KEY = 'sk-delivery-kinds-000000000001'
let hook: Receiver

const call = () =>
  postJson(`${dash.t.url}/v1/chat/completions`, { model: 'gpt-4o-mini', messages: [] }, { authorization: `Bearer ${KEY}`, 'x-burnrate-session': 'burner' })

const dash = useDashboard({
  config: async () => {
    hook = await receiver()
    return {
      timezone: 'UTC',
      pricing: { overrides: [{ model: 'gpt-4o-mini', input_mtok: 100, output_mtok: 0 }] },
      budgets: { rules: [{ api_key_pattern: 'sk-delivery-*', daily_limit_usd: 100, action: 'warn', alert_at_pct: [0.001] }] },
      runaway: { spend_rate: { usd_per_minute: 0.15, action: 'warn' } },
      alerts: { webhooks: [{ url: `${hook.url}/hook` }] },
    }
  },
  responder: chatPromptAnswer(1000),
  before: async ({ t }) => {
    for (let i = 0; i < 3; i++) expect((await call()).status).toBe(200)
    await eventually(async () => expect(hook.got.map((g) => g.body.type).sort()).toEqual(['budget.threshold', 'runaway.spend_rate']))
    await eventually(async () => {
      const log = (await request(`${t.url}/api/dashboard/alerts`)).json()
      return expect(log.deliveries.map((d: { type: string; status: string }) => `${d.type} ${d.status}`).sort()).toEqual(['budget.threshold delivered', 'runaway.spend_rate delivered'])
    })
  },
  after: () => hook?.close(),
})

describe.skipIf(NO_BROWSER !== null)('the alert delivery log', { timeout: 120_000 }, () => {
  it('names a runaway alert as one, apart from a budget threshold', async () => {
    const { page } = dash
    const rows = page.getByTestId('delivery-row')
    await expect.poll(() => rows.count()).toBe(2)
    const kinds = (await rows.locator('td:nth-child(2)').allTextContents()).map((s) => s.trim()).sort()
    expect(kinds).toEqual(['budget threshold', 'runaway spend rate'])
  })
})
