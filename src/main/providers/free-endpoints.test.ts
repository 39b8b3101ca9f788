import { describe, expect, it } from 'vitest'
import { anthropicBatchShape } from './anthropic-batch'
import { FREE_ENDPOINTS } from './free-endpoints'
import { geminiBatchShape } from './gemini-batch'
import { perplexity } from './perplexity'
import { xai } from './xai'
import { openaiEndpointOf, openaiEndpointShape } from './openai-endpoints'

const METHODS = ['GET', 'POST', 'DELETE']

describe('FREE_ENDPOINTS', () => {
  it('names every endpoint a provider shape marks free, and only those', () => {
    const free = new Set<string>()
    const paid = new Set<string>()
    const see = (s: { endpoint: string; free?: boolean } | null) => {
      if (s) (s.free ? free : paid).add(s.endpoint)
    }
    const openai = ['/chat/completions', '/responses', '/responses/resp_1', '/responses/resp_1/cancel', '/files/file_1/content', '/batches', '/batches/b_1', '/batches/b_1/cancel', '/embeddings']
    for (const m of METHODS) for (const p of openai) {
      const endpoint = openaiEndpointOf(m, p)
      see({ endpoint, ...openaiEndpointShape(endpoint) })
    }
    for (const m of METHODS) for (const p of ['/v1/messages/batches', '/v1/messages/batches/b_1', '/v1/messages/batches/b_1/cancel', '/v1/messages/batches/b_1/results']) see(anthropicBatchShape(m, p))
    for (const m of METHODS) for (const p of ['/v1beta/batches', '/v1beta/batches/b_1', '/v1beta/batches/b_1:cancel', '/v1beta/files/f_1:download']) see(geminiBatchShape(m, p))
    for (const m of METHODS) for (const p of ['/videos/generations', '/videos/edits', '/videos/extensions', '/videos/req_1', '/chat/completions', '/batches/b_1/requests', '/batches/b_1/results', '/batches/b_1:cancel']) see(xai.inspect({ method: m, path: p, query: '', headers: {}, body: {} }))
    for (const m of METHODS) for (const p of ['/async/chat/completions', '/async/chat/completions/req_1', '/v1/async/sonar', '/v1/async/sonar/req_1', '/chat/completions']) see(perplexity.inspect({ method: m, path: p, query: '', headers: {}, body: {} }))
    expect([...free].sort()).toEqual([...FREE_ENDPOINTS].sort())
    for (const e of paid) expect(FREE_ENDPOINTS).not.toContain(e)
  })
})
