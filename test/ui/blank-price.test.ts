import { describe, expect, it } from 'vitest'
import { makeCall } from '../dashboard/seed'
import { NO_BROWSER } from '../e2e/browser'
import { useDashboard } from '../support/dashboard-page'
import { request } from '../support/http'

// The Unpriced models panel's price fields are required, but a field holding only spaces (a
// stray space bar, a pasted blank) passes the browser's check, and Number(' ') is 0: the model
// was stored at $0 a million tokens, "later calls are priced at $0.00 / $0.00", so its calls were
// counted as free, priced, with nothing left to say they have no real price. A blank or
// unreadable price is refused in the panel, naming the field, and nothing is stored.

const TOKEN = 'blank-price-admin-token-0123456789'
const MODEL = 'gpt-8-mystery'
const dash = useDashboard({
  config: { timezone: 'UTC', admin: { enabled: true, token: TOKEN } },
  adminToken: TOKEN,
  before: async ({ t }) => {
    t.server.ledger.record(makeCall({ ts: Date.now() - 60_000, model: MODEL, cost_usd: 0, priced: false }))
    await t.server.ledger.flush()
  },
})

const prices = async () => (await request(`${dash.t.url}/api/admin/prices`, { headers: { authorization: `Bearer ${TOKEN}` } })).json().prices

describe.skipIf(NO_BROWSER !== null)('a blank price in the Unpriced models panel', { timeout: 120_000 }, () => {
  it('is refused, naming the field, and stores nothing', async () => {
    const { page } = dash
    const row = page.getByTestId('unpriced-row').filter({ hasText: MODEL })
    await expect.poll(() => row.getByTestId('set-price').count()).toBe(1)
    expect(await prices()).toEqual([])
    await row.getByLabel('input price').fill('  ')
    await row.getByLabel('output price').fill('2')
    await row.getByTestId('set-price').click()
    await expect.poll(() => page.getByTestId('price-message').textContent()).toMatch(/input price.*number/i)
    expect(await prices()).toEqual([])
    expect(await row.getByTestId('reprice').isDisabled()).toBe(true)
    // Nor a price in another notation: Number() read "0x10" as $16 and "1e3" as $1,000 a million tokens.
    for (const typed of ['0x10', '1e3', 'Infinity']) {
      await row.getByLabel('input price').fill(typed)
      await row.getByTestId('set-price').click()
      await expect.poll(() => page.getByTestId('price-message').textContent()).toMatch(/input price.*number/i)
      expect(await prices()).toEqual([])
    }
    // A real price is taken.
    await row.getByLabel('input price').fill('$1.25')
    await row.getByTestId('set-price').click()
    await expect.poll(() => page.getByTestId('price-message').textContent()).toMatch(/later calls are priced at \$1\.25 \/ \$2\.00/)
    expect(await prices()).toEqual([expect.objectContaining({ model: MODEL, input_mtok: 1.25, output_mtok: 2 })])
  })
})
