import { describe, expect, it } from 'vitest'
import { serverOverMockUpstream } from '../support/server'
import { recorded } from '../providers/ledger'
import { AT_LEAST, PIECES, PROSE, cutStreams, sse } from './cut-stream'

/**
 * Streams cut before their usage while the model streams its thinking, which is billed as
 * output, through a real server, real HTTP and the real SQLite ledger: each streams ~2,000 tokens
 * of thinking, then the upstream resets. The estimate counts that thinking.
 */

const s = serverOverMockUpstream()
const { streamsThenResets, post } = cutStreams(s)

describe("Anthropic: a stream cut after message_start while Claude streams its thinking (thinking_delta)", () => {
  const KEY = { 'x-api-key': 'sk-ant-estimate-thinking-000000001' }
  const start = { type: 'message_start', message: { id: 'msg_think1', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5', content: [], usage: { input_tokens: 40, output_tokens: 1 } } }
  const block = { type: 'content_block_start', index: 0, content_block: { type: 'thinking', thinking: '', signature: '' } }

  it('the thinking it streamed is estimated as output', async () => {
    streamsThenResets([
      sse(start, 'message_start'),
      sse(block, 'content_block_start'),
      ...PIECES.map((p) => sse({ type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: p } }, 'content_block_delta')),
    ])
    const body = { model: 'claude-sonnet-4-5', max_tokens: 16000, stream: true, thinking: { type: 'enabled', budget_tokens: 10000 }, messages: [{ role: 'user', content: 'Think.' }] }
    const row = await recorded(s.t, () => post('/anthropic/v1/messages', body, KEY))
    expect(row.estimated).toBe(1)
    expect(row.input_tokens).toBe(40)
    expect(row.output_tokens).toBeGreaterThan(AT_LEAST)
  })
})

describe('Responses API: a stream cut while it streams a reasoning summary', () => {
  const KEY = { authorization: 'Bearer sk-proj-estimate-thinking-00000001' }
  const created = { type: 'response.created', response: { id: 'resp_think1', object: 'response', model: 'gpt-5', status: 'in_progress', usage: null } }

  it('the summary it streamed is estimated as output (a floor for the reasoning)', async () => {
    streamsThenResets([
      sse(created, 'response.created'),
      ...PIECES.map((p) => sse({ type: 'response.reasoning_summary_text.delta', item_id: 'rs_1', output_index: 0, summary_index: 0, delta: p }, 'response.reasoning_summary_text.delta')),
    ])
    const row = await recorded(s.t, () => post('/openai/v1/responses', { model: 'gpt-5', stream: true, reasoning: { summary: 'auto' }, input: 'Think.' }, KEY))
    expect(row.estimated).toBe(1)
    expect(row.output_tokens).toBeGreaterThan(AT_LEAST)
  })
})

/**
 * Mistral's reasoning models (mistral-small-latest and mistral-medium-3-5 with `reasoning_effort`,
 * the Magistral models) stream a chunk's `delta.content` as a list of content chunks while they
 * think: `[{type: "thinking", thinking: [{type: "text", text}]}]` (a ThinkChunk), then text
 * (docs.mistral.ai/capabilities/reasoning; the Mistral SDKs' reasoning_with_streaming example).
 */
describe('Mistral: a stream cut while a reasoning model streams its thinking chunks', () => {
  const KEY = { authorization: 'Bearer mistral-estimate-thinking-000000000001' }
  const body = { model: 'mistral-medium-3-5', stream: true, reasoning_effort: 'high', messages: [{ role: 'user', content: 'Prove there are infinitely many primes.' }] }
  const chunk = (delta: object) => sse({ id: 'cmpl-m1', object: 'chat.completion.chunk', created: 1, model: 'mistral-medium-3-5', choices: [{ index: 0, delta, finish_reason: null }] })
  const first = chunk({ role: 'assistant', content: '' })

  it('control: the same text as string content is estimated', async () => {
    streamsThenResets([first, ...PIECES.map((p) => chunk({ content: p }))])
    const row = await recorded(s.t, () => post('/mistral/v1/chat/completions', body, KEY))
    expect(row.estimated).toBe(1)
    expect(row.output_tokens).toBeGreaterThan(AT_LEAST)
  })

  it('thinking chunks (`{type: "thinking", thinking: [{type: "text", text}]}`), billed as output, are counted', async () => {
    streamsThenResets([first, ...PIECES.map((p) => chunk({ content: [{ type: 'thinking', thinking: [{ type: 'text', text: p }] }] }))])
    const row = await recorded(s.t, () => post('/mistral/v1/chat/completions', body, KEY))
    expect(row.estimated).toBe(1)
    expect(row.output_tokens).toBeGreaterThan(AT_LEAST)
  })

  it('text chunks in a content list (`{type: "text", text}`) are counted', async () => {
    streamsThenResets([first, ...PIECES.map((p) => chunk({ content: [{ type: 'text', text: p }] }))])
    const row = await recorded(s.t, () => post('/mistral/v1/chat/completions', body, KEY))
    expect(row.estimated).toBe(1)
    expect(row.output_tokens).toBeGreaterThan(AT_LEAST)
  })

  it('thinking chunks kept in the history are counted as prompt', async () => {
    streamsThenResets([first])
    const messages = [
      { role: 'user', content: 'Prove there are infinitely many primes.' },
      { role: 'assistant', content: [{ type: 'thinking', thinking: [{ type: 'text', text: PROSE }] }, { type: 'text', text: 'Suppose finitely many.' }] },
      { role: 'user', content: 'Go on.' },
    ]
    const row = await recorded(s.t, () => post('/mistral/v1/chat/completions', { ...body, messages }, KEY))
    expect(row.estimated).toBe(1)
    expect(row.input_tokens).toBeGreaterThan(AT_LEAST)
  })
})

/**
 * Claude's web search tool (a server tool) is billed per search, $10 per 1,000, on top of the
 * tokens; a search that failed is not billed (docs: agents-and-tools/tool-use/web-search-tool).
 * Its count comes only in the final `message_delta` (`usage.server_tool_use.web_search_requests`),
 * so a stream cut after a search keeps the searches whose result blocks it streamed.
 */
describe('Anthropic: a stream cut after Claude ran web searches', () => {
  const KEY = { 'x-api-key': 'sk-ant-estimate-search-00000000001' }
  const start = { type: 'message_start', message: { id: 'msg_search1', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5', content: [], usage: { input_tokens: 2000, output_tokens: 1 } } }
  const search = (i: number, ok = true): Buffer[] => [
    sse({ type: 'content_block_start', index: 2 * i, content_block: { type: 'server_tool_use', id: `srvtoolu_${i}`, name: 'web_search', input: {} } }, 'content_block_start'),
    sse({ type: 'content_block_delta', index: 2 * i, delta: { type: 'input_json_delta', partial_json: `{"query": "primes ${i}"}` } }, 'content_block_delta'),
    sse({ type: 'content_block_stop', index: 2 * i }, 'content_block_stop'),
    sse(
      {
        type: 'content_block_start',
        index: 2 * i + 1,
        content_block: {
          type: 'web_search_tool_result',
          tool_use_id: `srvtoolu_${i}`,
          content: ok ? [{ type: 'web_search_result', title: 'Primes', url: 'https://example.com/primes', encrypted_content: 'EqgfCioIARgBIiQ3YTAwMjY1Mi1mZjM5LTQ1NGUtODgxNC1kNjNjNTk1ZWI3Y2MSDJ', page_age: null }] : { type: 'web_search_tool_result_error', error_code: 'max_uses_exceeded' },
        },
      },
      'content_block_start',
    ),
    sse({ type: 'content_block_stop', index: 2 * i + 1 }, 'content_block_stop'),
  ]

  it('two searches completed (a third failed) are billed with the estimate', async () => {
    streamsThenResets([sse(start, 'message_start'), ...search(0), ...search(1), ...search(2, false), sse({ type: 'content_block_start', index: 6, content_block: { type: 'text', text: '' } }, 'content_block_start'), ...PIECES.slice(0, 20).map((p) => sse({ type: 'content_block_delta', index: 6, delta: { type: 'text_delta', text: p } }, 'content_block_delta'))])
    const body = { model: 'claude-sonnet-4-5', max_tokens: 4096, stream: true, tools: [{ type: 'web_search_20250305', name: 'web_search', max_uses: 3 }], messages: [{ role: 'user', content: 'Look up primes.' }] }
    const row = await recorded(s.t, () => post('/anthropic/v1/messages', body, KEY))
    expect(row).toMatchObject({ estimated: 1, priced: 1, input_tokens: 2000 })
    expect(String(row.usage_extra)).toContain('"web_searches":2')
    // claude-sonnet-4-5: $3 / $15 per 1M tokens; two searches at $10 per 1,000.
    expect(row.cost_usd).toBeCloseTo((row.input_tokens * 3 + row.output_tokens * 15) / 1e6 + 0.02, 12)
  })

  it('a message_start that counted no prompt (the whole call estimated) keeps them too', async () => {
    const zero = { ...start, message: { ...start.message, usage: { input_tokens: 0, output_tokens: 0 } } }
    streamsThenResets([sse(zero, 'message_start'), ...search(0), ...search(1)])
    const body = { model: 'claude-sonnet-4-5', max_tokens: 4096, stream: true, tools: [{ type: 'web_search_20250305', name: 'web_search' }], messages: [{ role: 'user', content: 'Look up primes.' }] }
    const row = await recorded(s.t, () => post('/anthropic/v1/messages', body, KEY))
    expect(row).toMatchObject({ estimated: 1, priced: 1 })
    expect(String(row.usage_extra)).toContain('"web_searches":2')
  })
})
