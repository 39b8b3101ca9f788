import { describe, expect, it } from 'vitest'
import { makeCall } from '../dashboard/seed'
import { NO_BROWSER } from '../e2e/browser'
import { useDashboard } from '../support/dashboard-page'

// Calls of a model with no known price are recorded at $0. The summary cards, the cost breakdown,
// the sessions table and the provider legend summed them as $0 and showed "$0.00" (or $1.20 for an
// agent that also ran an unknown model), so a user read that the agent spent nothing. Each figure
// holding such calls now says so beside it: "+ 3 unpriced" after an amount, "2 unpriced" at $0.

const dash = useDashboard({
  before: async ({ t }) => {
    const at = Date.now() - 60_000
    const mix = { agent: 'coder', session: 's-mix', provider: 'openai' }
    t.server.ledger.record(makeCall({ ...mix, ts: at, model: 'gpt-4o-mini', cost_usd: 1.2 }))
    for (let i = 1; i <= 3; i++) t.server.ledger.record(makeCall({ ...mix, ts: at + i, model: 'mystery-1', cost_usd: 0, priced: false }))
    const ghost = { agent: 'ghost', session: 's-ghost', provider: 'anthropic', model: 'claude-mystery', cost_usd: 0, priced: false }
    for (let i = 4; i <= 5; i++) t.server.ledger.record(makeCall({ ...ghost, ts: at + i }))
    await t.server.ledger.flush()
  },
})

describe.skipIf(NO_BROWSER !== null)('unpriced calls in the dashboard figures', { timeout: 120_000 }, () => {
  it('are marked beside the summary cards, the breakdown, the sessions and the provider legend', async () => {
    const { page } = dash
    const mark = (scope: ReturnType<typeof page.getByTestId>) => scope.getByTestId('unpriced-count')

    const today = page.getByTestId('card-today')
    await expect.poll(() => mark(today).textContent(), { timeout: 15_000 }).toBe('+ 5 unpriced')
    expect(await today.locator('.money').first().getAttribute('data-exact')).toBe('1.2')
    expect(await today.locator('.value').textContent()).toMatch(/^\s*\$1\.20 \+ 5 unpriced\s*$/)
    expect(await mark(page.getByTestId('card-month')).textContent()).toBe('+ 5 unpriced')
    expect(await today.locator('.money').first().getAttribute('title')).toMatch(/5 calls of a model with no known price count as \$0/)

    // The breakdown by model: the unknown model's $0 is marked, the priced one is not.
    const rows = page.getByTestId('breakdown-row')
    await expect.poll(() => mark(rows.filter({ hasText: 'mystery-1' })).textContent(), { timeout: 15_000 }).toBe('3 unpriced')
    expect(await mark(rows.filter({ hasText: 'gpt-4o-mini' })).count()).toBe(0)
    // By agent: the agent that ran both shows its $1.20 and more; the other its $0 as unpriced.
    await page.getByTestId('group-by').locator('[data-group="agent"]').click()
    await expect.poll(() => page.getByTestId('breakdown-table').getAttribute('data-group'), { timeout: 15_000 }).toBe('agent')
    await expect.poll(() => mark(rows.filter({ hasText: 'coder' })).textContent(), { timeout: 15_000 }).toBe('+ 3 unpriced')
    expect(await mark(rows.filter({ hasText: 'ghost' })).textContent()).toBe('2 unpriced')

    const sessions = page.getByTestId('session-row')
    await expect.poll(() => mark(sessions.filter({ hasText: 's-mix' })).textContent(), { timeout: 15_000 }).toBe('+ 3 unpriced')
    expect(await mark(sessions.filter({ hasText: 's-ghost' })).textContent()).toBe('2 unpriced')

    const legend = page.getByTestId('provider-legend').locator('li')
    await expect.poll(() => mark(legend.filter({ hasText: 'OpenAI' })).textContent(), { timeout: 15_000 }).toBe('+ 3 unpriced')
    expect(await mark(legend.filter({ hasText: 'Anthropic' })).textContent()).toBe('2 unpriced')
  })
})
