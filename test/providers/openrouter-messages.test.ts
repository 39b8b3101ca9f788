import { beforeEach, describe, expect, it } from 'vitest'
import { fixture } from '../support/fixtures'
import { postJson } from '../support/http'
import { serverOverMockUpstream } from '../support/server'
import { answer, libraryPrice, recorded } from './ledger'

/**
 * OpenRouter's Anthropic-compatible Messages API (`POST https://openrouter.ai/api/v1/messages`)
 * through a running Burnrate: what Claude Code calls with `ANTHROPIC_BASE_URL` set to
 * `http://127.0.0.1:8787/openrouter` (OpenRouter's own setup has `https://openrouter.ai/api`),
 * its key in `ANTHROPIC_AUTH_TOKEN` (`Authorization: Bearer`).
 */

const s = serverOverMockUpstream()
beforeEach(() => {
  s.upstream.requests.length = 0
})

const MODEL = 'anthropic/claude-sonnet-4.5'
const HEADERS = { authorization: 'Bearer sk-or-v1-messages-000000000001', 'anthropic-version': '2023-06-01' }
const ask = (body: object = {}) => () => postJson(`${s.t.url}/openrouter/v1/messages`, { model: MODEL, max_tokens: 1024, messages: [{ role: 'user', content: 'hi' }], ...body }, HEADERS)
const sse = (type: string, data: object) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`

function message(usage: Record<string, unknown>) {
  return { id: 'gen-or-1', type: 'message', role: 'assistant', model: MODEL, content: [{ type: 'text', text: 'Hello!' }], stop_reason: 'end_turn', usage }
}

describe("OpenRouter's Anthropic Messages API", () => {
  it("is metered as Anthropic's Messages are, priced at OpenRouter's price for the model when no cost is reported", async () => {
    answer(s.upstream, message({ input_tokens: 4, cache_read_input_tokens: 1163, cache_creation_input_tokens: 0, output_tokens: 202 }))
    const row = await recorded(s.t, ask())
    expect(s.upstream.requests[0].url).toBe('/api/v1/messages')
    expect(s.upstream.requests[0].headers.authorization).toBe(HEADERS.authorization)
    expect(row).toMatchObject({ provider: 'openrouter', endpoint: 'messages', model: MODEL, status: 200, input_tokens: 1167, cache_read_tokens: 1163, output_tokens: 202, estimated: 0, priced: 1 })
    expect(row.cost_usd).toBe(libraryPrice('openrouter', { input_tokens: 1167, cache_read_tokens: 1163, output_tokens: 202 }, MODEL, row.ts))
  })

  it("an answer naming the model by its upstream's bare id (Anthropic's recorded answer) is priced as the request's OpenRouter slug", async () => {
    answer(s.upstream, fixture('anthropic/messages-nonstream-cache-read.json'))
    const row = await recorded(s.t, ask())
    expect(row).toMatchObject({ endpoint: 'messages', model: MODEL, input_tokens: 1167, cache_read_tokens: 1163, output_tokens: 202, priced: 1 })
    expect(row.cost_usd).toBe(libraryPrice('openrouter', { input_tokens: 1167, cache_read_tokens: 1163, output_tokens: 202 }, MODEL, row.ts))
  })

  it("records the charge OpenRouter reports in usage.cost (a bring-your-own key's upstream charge added)", async () => {
    answer(s.upstream, message({ input_tokens: 2000, output_tokens: 100, cost: 0.0123456, is_byok: false }))
    const row = await recorded(s.t, ask())
    expect(row).toMatchObject({ endpoint: 'messages', input_tokens: 2000, output_tokens: 100 })
    expect(row.cost_usd).toBe(0.0123456)

    answer(s.upstream, message({ input_tokens: 10, output_tokens: 5, cost: 0.0001, is_byok: true, cost_details: { upstream_inference_cost: 0.002 } }))
    const byok = await recorded(s.t, ask())
    expect(byok.cost_usd).toBe(0.0001 + 0.002)
  })

  it('streams: message_start and message_delta read as Anthropic streams are, the cost the last usage reports recorded', async () => {
    answer(
      s.upstream,
      sse('message_start', { message: { ...message({ input_tokens: 40, output_tokens: 1 }), content: [], stop_reason: null } }) +
        sse('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }) +
        sse('content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'Hello!' } }) +
        sse('content_block_stop', { index: 0 }) +
        sse('message_delta', { delta: { stop_reason: 'end_turn' }, usage: { input_tokens: 40, output_tokens: 3, cost: 0.000165 } }) +
        sse('message_stop', {}),
      'sse',
    )
    const row = await recorded(s.t, ask({ stream: true }))
    expect(row).toMatchObject({ endpoint: 'messages', streamed: 1, input_tokens: 40, output_tokens: 3, estimated: 0 })
    expect(row.cost_usd).toBe(0.000165)
  })
})
