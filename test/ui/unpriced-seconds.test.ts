import { describe, expect, it } from 'vitest'
import { makeCall } from '../dashboard/seed'
import { NO_BROWSER } from '../e2e/browser'
import { useDashboard } from '../support/dashboard-page'

// A model billed by something other than tokens (a transcription model by the second of audio:
// its calls have 0 tokens and `audio_seconds` in usage_extra) that the price data does not know.
// A per-token price prices none of it: set from the Unpriced models panel, it turned its calls
// into calls priced at $0 ("Every recorded model has a price", no "unpriced" mark), which
// understates the spend with nothing left to say so. The panel does not offer one for such a model.

const TOKEN = 'ui-admin-token-seconds-0123456789'
const MODEL = 'whisper-next'
const dash = useDashboard({
  config: { timezone: 'UTC', admin: { enabled: true, token: TOKEN } },
  adminToken: TOKEN,
  before: async ({ t }) => {
    const at = Date.now() - 60_000
    for (let i = 0; i < 2; i++) {
      t.server.ledger.record(makeCall({
        ts: at + i, model: MODEL, endpoint: '/v1/audio/transcriptions', input_tokens: 0, output_tokens: 0, cost_usd: 0, priced: false,
        usage_extra: JSON.stringify({ extra: { audio_seconds: 95 } }),
      }))
    }
    // A token-billed unknown model beside it keeps its form.
    t.server.ledger.record(makeCall({ ts: at + 5, model: 'gpt-6.1-sol', cost_usd: 0, priced: false }))
    await t.server.ledger.flush()
  },
})

describe.skipIf(NO_BROWSER !== null)('an unpriced model billed by the second', { timeout: 60_000 }, () => {
  it('is not offered a per-token price, and its calls stay unpriced', async () => {
    const { page, t } = dash
    const rows = page.getByTestId('unpriced-row')
    await expect.poll(() => rows.count(), { timeout: 15_000 }).toBe(2)
    const tokens = rows.filter({ hasText: 'gpt-6.1-sol' })
    await expect.poll(() => tokens.getByTestId('set-price').count(), { timeout: 15_000 }).toBe(1)
    const seconds = rows.filter({ hasText: MODEL })
    expect(await seconds.getByTestId('set-price').count()).toBe(0)
    expect(await seconds.getByTestId('no-token-price').textContent()).toMatch(/per-token price cannot price/)
    const calls = t.server.db.prepare('SELECT cost_usd, priced FROM calls WHERE model = ?').all(MODEL)
    expect(calls).toEqual([{ cost_usd: 0, priced: 0 }, { cost_usd: 0, priced: 0 }])
  })
})
