import { describe, expect, it } from 'vitest'
import { eventually, postJson, request } from '../support/http'
import { serverOverMockUpstream } from '../support/server'
import { rows } from './ledger'

/**
 * Perplexity's asynchronous Sonar API (docs.perplexity.ai/api-reference/async-chat-completions-post
 * and -request_id-get; perplexityai/perplexity-node `client.async.chat.completions`):
 * `POST /async/chat/completions` with `{request: {model, messages}}` answers only the job
 * (`{id, model, status: "CREATED"}`); `GET /async/chat/completions/{id}` is polled until its
 * `status` is `COMPLETED`, and only that answer's `response.usage` says what the call was billed
 * (`cost.total_cost`: Sonar Deep Research's tokens, searches and reasoning).
 */
const s = serverOverMockUpstream()
const H = { authorization: 'Bearer pplx-async-00000000000001' }

const ID = '8d4e1c5a-2b7f-4e3a-9c6d-1f0a2b3c4d5e'
// The finished job, as the docs' schema gives it, with Sonar Deep Research's usage and charge.
const USAGE = {
  prompt_tokens: 19,
  completion_tokens: 6_210,
  total_tokens: 6_229,
  citation_tokens: 31_440,
  num_search_queries: 22,
  reasoning_tokens: 178_520,
  search_context_size: 'low',
  cost: {
    input_tokens_cost: 0.00004,
    output_tokens_cost: 0.04968,
    citation_tokens_cost: 0.06288,
    reasoning_tokens_cost: 0.53556,
    search_queries_cost: 0.11,
    total_cost: 0.75816,
  },
}
const COMPLETED = {
  id: ID,
  model: 'sonar-deep-research',
  created_at: 1764970000,
  started_at: 1764970001,
  completed_at: 1764970190,
  status: 'COMPLETED',
  response: {
    id: 'c5b2e8d1-0000-4000-8000-000000000001',
    model: 'sonar-deep-research',
    created: 1764970190,
    object: 'chat.completion',
    usage: USAGE,
    choices: [{ index: 0, message: { role: 'assistant', content: 'Report…' }, finish_reason: 'stop' }],
  },
  failed_at: null,
  error_message: null,
}

describe('Perplexity async chat completions', () => {
  it('the job is recorded once, at the charge its finished answer reports, on the POST that created it; the polls cost nothing', async () => {
    const state = { done: false }
    s.upstream.setResponder((req) => {
      const json = (b: unknown) => ({ status: 200, headers: { 'content-type': 'application/json' }, body: JSON.stringify(b) })
      if (req.method === 'POST') return json({ id: ID, model: 'sonar-deep-research', created_at: 1764970000, status: 'CREATED' })
      return json(state.done ? COMPLETED : { id: ID, model: 'sonar-deep-research', created_at: 1764970000, status: 'IN_PROGRESS' })
    })
    const r = await postJson(`${s.t.url}/perplexity/v1/async/chat/completions`, { request: { model: 'sonar-deep-research', messages: [{ role: 'user', content: 'Research X' }] } }, H)
    expect(r.status).toBe(200)
    expect(s.upstream.requests.at(-1)!.url).toBe('/async/chat/completions')
    const poll = () => request(`${s.t.url}/perplexity/v1/async/chat/completions/${ID}`, { headers: H })
    expect((await poll()).status).toBe(200)
    state.done = true
    expect((await poll()).json()).toMatchObject({ status: 'COMPLETED' })
    // Read again later: nothing more.
    expect((await poll()).status).toBe(200)

    const call = await eventually(() => rows(s.t).find((c) => c.response_id === ID && c.estimated === 0 && c.cost_usd > 0))
    expect(call).toMatchObject({ provider: 'perplexity', model: 'sonar-deep-research', priced: 1 })
    // The charge Perplexity reported (usage.cost.total_cost), once.
    expect(call.cost_usd).toBe(0.75816)
    await s.t.server.proxy.drain(2000)
    expect(rows(s.t).filter((c) => c.provider === 'perplexity' && c.cost_usd > 0)).toHaveLength(1)
  })
})
