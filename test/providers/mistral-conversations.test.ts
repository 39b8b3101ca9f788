import { calcPrice } from '@pydantic/genai-prices'
import { beforeEach, describe, expect, it } from 'vitest'
import { eventually, postJson } from '../support/http'
import { serverOverMockUpstream } from '../support/server'
import { rows } from './ledger'

/**
 * Mistral's Conversations API (docs.mistral.ai/api "Beta Conversations"; mistralai/client-python
 * `conversations.py`, models `ConversationResponse`, `ConversationUsageInfo`, `ResponseDoneEvent`,
 * `MessageOutputEvent`, `SSETypes`), in those shapes: `POST /v1/conversations` (start), `POST
 * /v1/conversations/{id}` (append) answer a `conversation.response` with its `usage`, or with
 * `stream: true` events whose `conversation.response.done` carries it.
 */
const s = serverOverMockUpstream()
beforeEach(() => {
  s.upstream.requests.length = 0
})
const H = { authorization: 'Bearer mistral-conv-0000000000000001' }
const MODEL = 'mistral-medium-latest'
const USAGE = { prompt_tokens: 1_200, completion_tokens: 300, total_tokens: 1_500, connector_tokens: null, connectors: null }

function response(id: string, usage: Record<string, unknown> = USAGE) {
  return {
    object: 'conversation.response',
    conversation_id: id,
    outputs: [
      {
        object: 'entry',
        type: 'message.output',
        created_at: '2026-12-07T03:00:00Z',
        completed_at: '2026-12-07T03:00:02Z',
        id: 'msg_0001',
        agent_id: null,
        model: MODEL,
        role: 'assistant',
        content: 'Astro Boy first aired in 1963.',
      },
    ],
    usage,
  }
}

const price = (usage: Record<string, number>, ts: number) => calcPrice(usage, MODEL, { providerId: 'mistral', timestamp: new Date(ts) })!.total_price
const callOf = (id: string) => rows(s.t).find((r) => r.response_id === id && r.endpoint === 'conversations')

describe("Mistral's Conversations API is metered", () => {
  it('a conversation started, then appended to: each turn its model, tokens and cost', async () => {
    const id = 'conv_0001'
    s.upstream.setResponder(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body: JSON.stringify(response(id)) }))
    const r = await postJson(`${s.t.url}/mistral/v1/conversations`, { model: MODEL, inputs: 'Who is the best French painter?', stream: false }, H)
    expect(r.status).toBe(200)
    expect(s.upstream.requests[0].url).toBe('/v1/conversations')
    const call = await eventually(() => callOf(id))
    expect(call).toMatchObject({ provider: 'mistral', model: MODEL, input_tokens: 1_200, output_tokens: 300, estimated: 0, priced: 1 })
    expect(call.cost_usd).toBe(price({ input_tokens: 1_200, output_tokens: 300 }, call.ts))
    expect(call.cost_usd).toBeGreaterThan(0)

    // An append names no model: the answer does. Connector tokens only the total counts are input.
    s.upstream.setResponder(() => ({
      status: 200,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(response(id, { prompt_tokens: 2_000, completion_tokens: 100, total_tokens: 2_600, connector_tokens: 500, connectors: { web_search: 1 } })),
    }))
    await postJson(`${s.t.url}/mistral/v1/conversations/${id}`, { inputs: 'And the best Japanese one?', stream: false }, H)
    const second = await eventually(() => rows(s.t).filter((c) => c.response_id === id && c.endpoint === 'conversations')[1])
    expect(s.upstream.requests.at(-1)!.url).toBe(`/v1/conversations/${id}`)
    expect(second).toMatchObject({ model: MODEL, input_tokens: 2_500, output_tokens: 100, priced: 1 })
    expect(second.cost_usd).toBe(price({ input_tokens: 2_500, output_tokens: 100 }, second.ts))
  })

  it('a streamed conversation: the usage of its conversation.response.done event', async () => {
    const id = 'conv_0002'
    const ev = (data: Record<string, unknown>) => `event: ${data.type}\ndata: ${JSON.stringify(data)}\n\n`
    const body =
      ev({ type: 'conversation.response.started', created_at: '2026-12-07T03:00:00Z', conversation_id: id }) +
      ev({ type: 'message.output.delta', created_at: '2026-12-07T03:00:01Z', output_index: 0, id: 'msg_0002', content_index: 0, model: MODEL, agent_id: null, role: 'assistant', content: 'Astro Boy ' }) +
      ev({ type: 'message.output.delta', created_at: '2026-12-07T03:00:01Z', output_index: 0, id: 'msg_0002', content_index: 0, model: MODEL, agent_id: null, role: 'assistant', content: 'first aired in 1963.' }) +
      ev({ type: 'conversation.response.done', created_at: '2026-12-07T03:00:02Z', usage: USAGE })
    s.upstream.setResponder(() => ({ status: 200, headers: { 'content-type': 'text/event-stream' }, chunks: [Buffer.from(body.slice(0, 100)), Buffer.from(body.slice(100))], delayMs: 1 }))
    const r = await postJson(`${s.t.url}/mistral/v1/conversations`, { model: MODEL, inputs: [{ role: 'user', content: 'When did Astro Boy first air?' }], stream: true }, H)
    expect(r.text).toBe(body)
    const call = await eventually(() => callOf(id))
    expect(call).toMatchObject({ model: MODEL, streamed: 1, input_tokens: 1_200, output_tokens: 300, estimated: 0, priced: 1 })
    expect(call.cost_usd).toBe(price({ input_tokens: 1_200, output_tokens: 300 }, call.ts))
  })
})
