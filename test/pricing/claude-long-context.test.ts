import { describe, expect, it } from 'vitest'
import { anthropicStream } from '../support/fixtures'
import { postJson } from '../support/http'
import { serverOverMockUpstream } from '../support/server'
import { answer, recorded } from '../providers/ledger'

/**
 * Claude Sonnet 4 and Sonnet 4.5 with the 1M context window (the `context-1m-2025-08-07` beta,
 * on Anthropic's API, Amazon Bedrock and Vertex AI until it was retired): a request whose prompt
 * (input, cache writes and cache reads together) passes 200K tokens is billed whole at the
 * long-context rates, twice each input-side price (input, 5-minute and 1-hour cache writes,
 * cache reads) and 1.5x output. The price data has those tiers for Sonnet 4.5 on Anthropic's API
 * only: Sonnet 4 everywhere, and Sonnet 4.5 on Bedrock, were priced at the standard rates, half
 * the input billed. Answers as each platform sends them, through a running Burnrate.
 */

const s = serverOverMockUpstream({ providers: { bedrock: { enabled: true } } })

/** Per million tokens: input, 5-minute write, 1-hour write, read, output. */
type Rates = [number, number, number, number, number]

function cost(r: Rates, input: number, write5m: number, write1h: number, read: number, output: number): number {
  return (input * r[0] + write5m * r[1] + write1h * r[2] + read * r[3] + output * r[4]) / 1e6
}

// Anthropic's list (and Vertex AI's global endpoint, Bedrock's for Sonnet 4): $3 input.
const STANDARD: Rates = [3, 3.75, 6, 0.3, 15]
const LONG: Rates = [6, 7.5, 12, 0.6, 22.5]
// Bedrock's regional (`us.`) profile of Sonnet 4.5: 10% above the list, at both tiers.
const BEDROCK_REGIONAL_LONG: Rates = [6.6, 8.25, 13.2, 0.66, 24.75]

/** An Anthropic usage: 48,000 new input tokens, 4,000 + 8,000 cache writes, `read` cache reads. */
function usage(read: number, output: number) {
  return {
    input_tokens: 48_000,
    cache_creation_input_tokens: 12_000,
    cache_read_input_tokens: read,
    cache_creation: { ephemeral_5m_input_tokens: 4_000, ephemeral_1h_input_tokens: 8_000 },
    output_tokens: output,
    service_tier: 'standard',
  }
}

function message(model: string, u: object) {
  return { id: 'msg_01LongContext', type: 'message', role: 'assistant', model, content: [{ type: 'text', text: 'Done.' }], stop_reason: 'end_turn', stop_sequence: null, usage: u }
}

describe('Claude Sonnet 4 and 4.5 past 200K prompt tokens', () => {
  it("Anthropic's API, Sonnet 4: the whole call at the long-context rates, the prompt counted with its cache reads and writes", async () => {
    const model = 'claude-sonnet-4-20250514'
    answer(s.upstream, message(model, usage(180_000, 2_000)))
    const row = await recorded(s.t, () => postJson(`${s.t.url}/v1/messages`, { model, max_tokens: 4096, messages: [] }, { 'x-api-key': 'sk-ant-long-context-0001', 'anthropic-beta': 'context-1m-2025-08-07' }))
    expect(row).toMatchObject({ model, input_tokens: 240_000, cache_read_tokens: 180_000, cache_write_tokens: 12_000, cache_write_1h_tokens: 8_000, output_tokens: 2_000, priced: 1, estimated: 0 })
    expect(row.cost_usd).toBeCloseTo(cost(LONG, 48_000, 4_000, 8_000, 180_000, 2_000), 12)

    // At 200K exactly, the standard rates.
    answer(s.upstream, message(model, usage(140_000, 2_000)))
    const below = await recorded(s.t, () => postJson(`${s.t.url}/v1/messages`, { model, max_tokens: 4096, messages: [] }, { 'x-api-key': 'sk-ant-long-context-0001' }))
    expect(below).toMatchObject({ input_tokens: 200_000, priced: 1 })
    expect(below.cost_usd).toBeCloseTo(cost(STANDARD, 48_000, 4_000, 8_000, 140_000, 2_000), 12)
  })

  it('Vertex AI, Sonnet 4 streamed through the global endpoint: the long-context rates', async () => {
    answer(s.upstream, anthropicStream({ id: 'msg_vrtx_long', model: 'claude-sonnet-4-20250514', usage: { ...usage(200_000, 1) } }, 3_000, 'Summary.'), 'sse')
    const path = '/v1/projects/my-proj/locations/global/publishers/anthropic/models/claude-sonnet-4@20250514:streamRawPredict'
    const row = await recorded(s.t, () => postJson(`${s.t.url}/vertex${path}`, { anthropic_version: 'vertex-2023-10-16', stream: true, max_tokens: 4096, messages: [] }, { authorization: 'Bearer ya29.a0-burnrate-long-context-0001' }))
    expect(row).toMatchObject({ provider: 'vertex', input_tokens: 260_000, output_tokens: 3_000, priced: 1, estimated: 0 })
    expect(row.cost_usd).toBeCloseTo(cost(LONG, 48_000, 4_000, 8_000, 200_000, 3_000), 12)
  })

  it("Amazon Bedrock, Sonnet 4.5 through a regional profile: the long-context rates, with Bedrock's regional premium", async () => {
    const model = 'us.anthropic.claude-sonnet-4-5-20250929-v1:0'
    answer(s.upstream, message('claude-sonnet-4-5-20250929', usage(190_000, 1_500)))
    const row = await recorded(s.t, () =>
      postJson(`${s.t.url}/bedrock/us-east-1/model/${model}/invoke`, { anthropic_version: 'bedrock-2023-05-31', anthropic_beta: ['context-1m-2025-08-07'], max_tokens: 4096, messages: [] }, { authorization: 'Bearer ABSKQmVkcm9ja0FQSUtleS1sb25nLWNvbnRleHQtMDAwMQ==' }),
    )
    expect(row).toMatchObject({ provider: 'bedrock', model, input_tokens: 250_000, output_tokens: 1_500, priced: 1, estimated: 0 })
    expect(row.cost_usd).toBeCloseTo(cost(BEDROCK_REGIONAL_LONG, 48_000, 4_000, 8_000, 190_000, 1_500), 12)
  })
})
