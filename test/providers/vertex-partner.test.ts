import { beforeEach, describe, expect, it } from 'vitest'
import { postJson } from '../support/http'
import { serverOverMockUpstream } from '../support/server'
import { answer, recorded } from './ledger'

/**
 * Mistral AI's models on Vertex AI (cloud.google.com/vertex-ai/generative-ai/docs/partner-models/mistral:
 * "You pay for Mistral AI models as you use them (pay as you go)"; docs.mistral.ai/deployment/cloud/vertex:
 * `POST …/locations/{region}/publishers/mistralai/models/{model}:rawPredict`, or `:streamRawPredict`,
 * with Mistral's chat completion request, answered as Mistral's API answers, `usage` {prompt_tokens,
 * completion_tokens, total_tokens}, a stream's last chunk carrying it).
 */

const s = serverOverMockUpstream()

beforeEach(() => {
  s.upstream.requests.length = 0
})

const HEADERS = { authorization: 'Bearer ya29.a0-burnrate-vertex-test-token-0002' }
const MISTRAL = '/v1/projects/my-proj/locations/us-central1/publishers/mistralai/models'

describe('Vertex AI partner models', () => {
  it("Mistral with rawPredict: a billed call, its answer's tokens recorded (not a free call with none)", async () => {
    answer(s.upstream, {
      id: 'b2a9c0e4f1d84c7e9a0b3c5d6e7f8a90',
      object: 'chat.completion',
      created: 1764970000,
      model: 'mistral-small-2503',
      choices: [{ index: 0, message: { role: 'assistant', content: 'Bonjour !', tool_calls: null }, finish_reason: 'stop' }],
      usage: { prompt_tokens: 1_200, completion_tokens: 300, total_tokens: 1_500 },
    })
    const path = `${MISTRAL}/mistral-small-2503:rawPredict`
    const row = await recorded(s.t, () => postJson(`${s.t.url}/vertex${path}`, { model: 'mistral-small-2503', messages: [{ role: 'user', content: 'hi' }], stream: false }, HEADERS))
    expect(s.upstream.requests[0].url).toBe(path)
    expect(row).toMatchObject({ provider: 'vertex', model: 'mistral-small-2503', input_tokens: 1_200, output_tokens: 300 })
    // No Vertex price for it in the price data: recorded unpriced (flagged), never as a call that cost nothing.
    expect(row.priced).toBe(0)
  })

  it('Mistral with streamRawPredict: the stream\'s usage chunk recorded, as the JSON answer\'s is', async () => {
    const chunk = (o: object) => `data: ${JSON.stringify(o)}\n\n`
    const base = { id: 'c3b0d1e5f2a94d8f0b1c4d6e7f8a9b01', object: 'chat.completion.chunk', created: 1764970001, model: 'mistral-small-2503' }
    answer(
      s.upstream,
      chunk({ ...base, choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }] }) +
        chunk({ ...base, choices: [{ index: 0, delta: { content: 'Bonjour !' }, finish_reason: null }] }) +
        chunk({ ...base, choices: [{ index: 0, delta: { content: '' }, finish_reason: 'stop' }], usage: { prompt_tokens: 1_200, total_tokens: 1_500, completion_tokens: 300 } }) +
        'data: [DONE]\n\n',
      'sse',
    )
    const row = await recorded(s.t, () => postJson(`${s.t.url}/vertex${MISTRAL}/mistral-small-2503:streamRawPredict`, { model: 'mistral-small-2503', messages: [{ role: 'user', content: 'hi' }], stream: true }, HEADERS))
    expect(row).toMatchObject({ provider: 'vertex', model: 'mistral-small-2503', streamed: 1, input_tokens: 1_200, output_tokens: 300, estimated: 0 })
    expect(row.priced).toBe(0)
  })
})
