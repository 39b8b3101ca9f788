import { describe, expect, it } from 'vitest'
import { makeCall } from '../dashboard/seed'
import { NO_BROWSER } from '../e2e/browser'
import { useDashboard } from '../support/dashboard-page'

// The cost breakdown by provider shows each provider by the name people know it by (`bedrock` as
// Amazon Bedrock, `foundry` as Microsoft Foundry). Sorted A→Z by that column, its rows came in the
// order of the ids instead (Azure OpenAI, Amazon Bedrock, Microsoft Foundry, Gemini API): a list
// that reads unsorted, where a user looks for a provider by its first letter.

const PROVIDERS = ['azure', 'bedrock', 'foundry', 'gemini', 'vertex']
const dash = useDashboard({
  path: '/?group=provider',
  before: async ({ t }) => {
    PROVIDERS.forEach((provider, i) => t.server.ledger.record(makeCall({ ts: Date.now() - 60_000 + i, provider, model: `m-${provider}`, cost_usd: [0.3, 0.5, 0.1, 0.4, 0.2][i] })))
    await t.server.ledger.flush()
  },
})

describe.skipIf(NO_BROWSER !== null)('the cost breakdown sorted by provider', { timeout: 120_000 }, () => {
  it('lists the providers A→Z by the names it shows, then Z→A', async () => {
    const { page } = dash
    const table = page.locator('[data-testid="breakdown-table"][data-group="provider"]')
    const names = async () => (await table.locator('[data-testid="breakdown-row"] td.key').allTextContents()).map((s) => s.trim())
    await expect.poll(() => table.locator('[data-testid="breakdown-row"]').count()).toBe(PROVIDERS.length)
    // By cost first, costliest first.
    expect(await names()).toEqual(['Amazon Bedrock', 'Gemini API', 'Azure OpenAI', 'Vertex AI', 'Microsoft Foundry'])
    const header = table.locator('thead th').first()
    await header.getByRole('button').click()
    await expect.poll(() => header.getAttribute('aria-sort')).toBe('ascending')
    expect(await names()).toEqual(['Amazon Bedrock', 'Azure OpenAI', 'Gemini API', 'Microsoft Foundry', 'Vertex AI'])
    await header.getByRole('button').click()
    await expect.poll(() => header.getAttribute('aria-sort')).toBe('descending')
    expect(await names()).toEqual(['Vertex AI', 'Microsoft Foundry', 'Gemini API', 'Azure OpenAI', 'Amazon Bedrock'])
  })
})
