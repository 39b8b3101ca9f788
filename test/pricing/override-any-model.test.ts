import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { postJson } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'
import { recorded } from '../providers/ledger'

// README, pricing.overrides: a cache rate left out is the input price, "a Claude model's" Anthropic's
// multiple of it (reads 0.1x, 5-minute writes 1.25x, 1-hour writes 2x). An entry for every model of
// a provider (`model: "*"`) priced a Claude call's cache at the input price all the same: its reads at
// 10x what Anthropic bills, its 1-hour writes at half.

const ANSWER = {
  id: 'msg_x', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5-20250929', content: [{ type: 'text', text: 'ok' }],
  usage: { input_tokens: 1_000, cache_read_input_tokens: 100_000, cache_creation_input_tokens: 10_000, cache_creation: { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: 10_000 }, output_tokens: 1_000 },
}

describe('a pricing.overrides entry for every model of a provider (model "*")', () => {
  let upstream: MockUpstream
  let t: TestServer
  beforeAll(async () => {
    upstream = await startMockUpstream(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body: JSON.stringify(ANSWER) }))
    t = await startTestServer({ pricing: { overrides: [{ model: '*', provider: 'anthropic', input_mtok: 3, output_mtok: 15 }] } }, upstream.url)
  })
  afterAll(async () => {
    await t.cleanup()
    await upstream.close()
  })

  it("prices a Claude call's cache reads and 1-hour writes at Anthropic's multiples of its input price, as an entry naming the model does", async () => {
    const row = await recorded(t, () =>
      postJson(`${t.url}/v1/messages`, { model: 'claude-sonnet-4-5', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }, { 'x-api-key': 'sk-ant-override-any-model-0001' }),
    )
    // 1k input at $3, 100k reads at $0.30, 10k 1-hour writes at $6, 1k output at $15 per million
    // (before: reads and writes at $3, $0.348).
    const expected = (1_000 * 3 + 100_000 * 0.3 + 10_000 * 6 + 1_000 * 15) / 1e6
    expect(row).toMatchObject({ priced: 1, cache_read_tokens: 100_000, cache_write_1h_tokens: 10_000, cost_usd: expect.closeTo(expected, 12) })
  })
})
