import { describe, expect, it } from 'vitest'
import { NO_BROWSER } from '../e2e/browser'
import { useDashboard } from '../support/dashboard-page'
import { eventually, postJson, request } from '../support/http'
import { chatPromptAnswer } from '../support/mock-upstream'

// The cost breakdown by API key named each key by a piece of its SHA-256 hash (`3f2a9c1e…77d0`),
// which nobody can tell apart, though the costs API sends each key's hint (`sk-…0001`), as the API
// keys panel shows it. It must show the hint (never more of the key), with the hash beside it.

const KEY = 'sk-breakdown-hint-secret-000000000001'
let hash = ''

const dash = useDashboard({
  responder: chatPromptAnswer(1000),
  path: '/?group=api_key',
  before: async ({ t }) => {
    expect((await postJson(`${t.url}/v1/chat/completions`, { model: 'gpt-4o-mini', messages: [] }, { authorization: `Bearer ${KEY}` })).status).toBe(200)
    await eventually(async () => {
      const rows = (await request(`${t.url}/api/dashboard/costs?group_by=api_key`)).json().rows
      expect(rows[0]?.key_hint).toBe('sk-…0001')
      hash = rows[0].key
      return true
    })
  },
})

describe.skipIf(NO_BROWSER !== null)('the cost breakdown by API key', { timeout: 120_000 }, () => {
  it("names each key by its hint, never more of the key", async () => {
    const { page } = dash
    const row = page.locator('#breakdown [data-testid="breakdown-row"]').first()
    await expect.poll(async () => ((await row.count()) ? await row.locator('td').first().textContent() : '')).toContain('sk-…0001')
    const cell = (await row.locator('td').first().textContent()) ?? ''
    expect(cell).toContain(hash.slice(0, 8))
    const html = await page.content()
    expect(html).not.toContain(KEY)
    expect(html).not.toContain(KEY.slice(0, 12))
  })
})
