import { calcPrice, extractUsage, findProvider } from '@pydantic/genai-prices'
import { describe, expect, it } from 'vitest'
import { anthropicStream } from '../support/fixtures'
import { postJson } from '../support/http'
import { serverOverMockUpstream } from '../support/server'
import { answer, recorded } from './ledger'

/**
 * Anthropic's prompt cache in a stream: `message_start` carries the cache reads and writes, with
 * the writes split by lifetime in `cache_creation` (1-hour writes cost 2x input, 5-minute ones
 * 1.25x); `message_delta` carries the final output. Checked against the sum by hand and against
 * genai-prices' own reading of the final usage.
 */

const s = serverOverMockUpstream()

const MODEL = 'claude-sonnet-4-5-20250929'
const start = {
  input_tokens: 10,
  cache_creation_input_tokens: 3_000,
  cache_read_input_tokens: 500,
  cache_creation: { ephemeral_5m_input_tokens: 1_000, ephemeral_1h_input_tokens: 2_000 },
  output_tokens: 1,
}
const STREAM = anthropicStream({ id: 'msg_cache1h', model: MODEL, usage: start }, 50, 'Cached.')

describe('Anthropic prompt-cache writes by lifetime, in a stream', () => {
  it('1-hour writes at 2x input, 5-minute ones at 1.25x, reads at 0.1x', async () => {
    answer(s.upstream, STREAM, 'sse')
    const row = await recorded(s.t, () =>
      postJson(`${s.t.url}/v1/messages`, { model: 'claude-sonnet-4-5', stream: true, max_tokens: 100, messages: [] }, { 'x-api-key': 'sk-ant-cache-000000000001' }),
    )
    expect(row).toMatchObject({ input_tokens: 3_510, cache_write_tokens: 3_000, cache_write_1h_tokens: 2_000, cache_read_tokens: 500, output_tokens: 50, estimated: 0 })
    // Sonnet 4.5: $3 input, $3.75 5-minute write, $6 1-hour write, $0.30 read, $15 output per million.
    expect(row.cost_usd).toBeCloseTo((10 * 3 + 1_000 * 3.75 + 2_000 * 6 + 500 * 0.3 + 50 * 15) / 1e6, 15)
    const lib = extractUsage(findProvider({ providerId: 'anthropic' })!, { model: MODEL, usage: { ...start, output_tokens: 50 } })
    expect(row.cost_usd).toBe(calcPrice(lib.usage, MODEL, { providerId: 'anthropic', timestamp: new Date(row.ts) })!.total_price)
  })
})
