import { describe, expect, it } from 'vitest'
import { eventMessage } from '../support/event-stream'
import { serverOverMockUpstream } from '../support/server'
import { recorded } from '../providers/ledger'
import { AT_LEAST, PIECES, PROSE, cutStreams, sse } from './cut-stream'

/**
 * Streams cut before their usage, through a real server, real HTTP and the real SQLite ledger:
 * each streams ~2,000 tokens of one kind of text (reasoning, a tool's input), or sends a prompt
 * whose bulk is of one kind (tool results, tool calls in the history), then the upstream resets.
 * The estimate counts that text (it was counted as 0, so the cut call cost nothing); a control of
 * each format sends the same text as plain content.
 */

const s = serverOverMockUpstream()
const { streamsThenResets, post } = cutStreams(s)

describe('OpenAI-compatible chat: a stream cut while the model streams its reasoning', () => {
  const KEY = { authorization: 'Bearer sk-deepseek-review-0000000000001' }
  const body = { model: 'deepseek-reasoner', stream: true, messages: [{ role: 'user', content: 'Prove there are infinitely many primes.' }] }
  const first = { id: 'chatcmpl-r1', object: 'chat.completion.chunk', model: 'deepseek-reasoner', choices: [{ index: 0, delta: { role: 'assistant', content: null, reasoning_content: '' } }] }
  const chunk = (delta: object) => sse({ id: 'chatcmpl-r1', object: 'chat.completion.chunk', model: 'deepseek-reasoner', choices: [{ index: 0, delta }] })

  it('control: the same text as `content` is estimated (~2,000 output tokens)', async () => {
    streamsThenResets([sse(first), ...PIECES.map((p) => chunk({ content: p }))])
    const row = await recorded(s.t, () => post('/deepseek/v1/chat/completions', body, KEY))
    expect(row.estimated).toBe(1)
    expect(row.output_tokens).toBeGreaterThan(AT_LEAST)
  })

  it('`reasoning_content` (DeepSeek, xAI, vLLM), billed as output, is counted', async () => {
    streamsThenResets([sse(first), ...PIECES.map((p) => chunk({ reasoning_content: p }))])
    const row = await recorded(s.t, () => post('/deepseek/v1/chat/completions', body, KEY))
    expect(row.estimated).toBe(1)
    expect(row.output_tokens).toBeGreaterThan(AT_LEAST)
  })

  it('`reasoning` (OpenRouter, Groq) likewise', async () => {
    streamsThenResets([sse(first), ...PIECES.map((p) => chunk({ reasoning: p }))])
    const row = await recorded(s.t, () => post('/deepseek/v1/chat/completions', body, KEY))
    expect(row.estimated).toBe(1)
    expect(row.output_tokens).toBeGreaterThan(AT_LEAST)
  })

  it("OpenRouter's reasoning_details, the same text again beside `reasoning`, is not counted twice", async () => {
    streamsThenResets([sse(first), ...PIECES.map((p) => chunk({ reasoning: p, reasoning_details: [{ type: 'reasoning.text', text: p, format: 'unknown', index: 0 }] }))])
    const row = await recorded(s.t, () => post('/deepseek/v1/chat/completions', body, KEY))
    expect(row.estimated).toBe(1)
    expect(row.output_tokens).toBeGreaterThan(AT_LEAST)
    // ~2,000 once; twice would be ~4,000.
    expect(row.output_tokens).toBeLessThan(3 * AT_LEAST)
  })
})

describe('Responses API: a stream cut while a custom tool call streams its input (Codex apply_patch)', () => {
  const KEY = { authorization: 'Bearer sk-proj-review-estimate-000000000001' }
  const created = { type: 'response.created', response: { id: 'resp_review1', object: 'response', model: 'gpt-5-codex', status: 'in_progress', usage: null } }
  const added = { type: 'response.output_item.added', output_index: 0, item: { type: 'custom_tool_call', id: 'ctc_1', call_id: 'call_1', name: 'apply_patch', input: '' } }

  it('control: the same text as output_text deltas is estimated', async () => {
    streamsThenResets([sse(created, 'response.created'), ...PIECES.map((p) => sse({ type: 'response.output_text.delta', item_id: 'msg_1', output_index: 0, content_index: 0, delta: p }, 'response.output_text.delta'))])
    const row = await recorded(s.t, () => post('/openai/v1/responses', { model: 'gpt-5-codex', stream: true, input: 'Fix the bug.' }, KEY))
    expect(row.estimated).toBe(1)
    expect(row.output_tokens).toBeGreaterThan(AT_LEAST)
  })

  it('response.custom_tool_call_input.delta (the patch a custom tool is sent) is counted as output', async () => {
    streamsThenResets([
      sse(created, 'response.created'),
      sse(added, 'response.output_item.added'),
      ...PIECES.map((p) => sse({ type: 'response.custom_tool_call_input.delta', item_id: 'ctc_1', output_index: 0, delta: p }, 'response.custom_tool_call_input.delta')),
    ])
    const row = await recorded(s.t, () => post('/openai/v1/responses', { model: 'gpt-5-codex', stream: true, input: 'Fix the bug.' }, KEY))
    expect(row.estimated).toBe(1)
    expect(row.output_tokens).toBeGreaterThan(AT_LEAST)
  })

  it('a custom_tool_call item in the request history (its `input`) is counted as prompt', async () => {
    streamsThenResets([sse(created, 'response.created')])
    const input = [
      { role: 'user', content: [{ type: 'input_text', text: 'Fix the bug.' }] },
      { type: 'custom_tool_call', call_id: 'call_0', name: 'apply_patch', input: PROSE },
      { type: 'custom_tool_call_output', call_id: 'call_0', output: 'Done.' },
    ]
    const row = await recorded(s.t, () => post('/openai/v1/responses', { model: 'gpt-5-codex', stream: true, input }, KEY))
    expect(row.estimated).toBe(1)
    expect(row.input_tokens).toBeGreaterThan(AT_LEAST)
  })
})

describe('Bedrock ConverseStream: usage only comes in the last (metadata) event, so every cut stream is estimated', () => {
  const HEADERS = { authorization: 'Bearer ABSKQmVkcm9ja0FQSUtleS1idXJucmF0ZS10ZXN0LTAwMDE=' }
  const PATH = '/bedrock/us-east-1/model/us.anthropic.claude-sonnet-4-5-20250929-v1:0/converse-stream'
  const ES = 'application/vnd.amazon.eventstream'
  const start = eventMessage('messageStart', { role: 'assistant' })

  it('control: text deltas are estimated', async () => {
    streamsThenResets([start, ...PIECES.map((p) => eventMessage('contentBlockDelta', { contentBlockIndex: 0, delta: { text: p } }))], ES)
    const row = await recorded(s.t, () => post(PATH, { messages: [{ role: 'user', content: [{ text: 'Write.' }] }] }, HEADERS))
    expect(row.estimated).toBe(1)
    expect(row.output_tokens).toBeGreaterThan(AT_LEAST)
  })

  it('toolUse input deltas (an agent writing a file through a tool) are counted as output', async () => {
    streamsThenResets(
      [
        start,
        eventMessage('contentBlockStart', { contentBlockIndex: 0, start: { toolUse: { toolUseId: 'tooluse_1', name: 'write_file' } } }),
        ...PIECES.map((p) => eventMessage('contentBlockDelta', { contentBlockIndex: 0, delta: { toolUse: { input: JSON.stringify(p) } } })),
      ],
      ES,
    )
    const row = await recorded(s.t, () => post(PATH, { messages: [{ role: 'user', content: [{ text: 'Write.' }] }] }, HEADERS))
    expect(row.estimated).toBe(1)
    expect(row.output_tokens).toBeGreaterThan(AT_LEAST)
  })

  it('toolResult / toolUse blocks in the request are counted as prompt', async () => {
    streamsThenResets([start], ES)
    const messages = [
      { role: 'user', content: [{ text: 'Read the file.' }] },
      { role: 'assistant', content: [{ toolUse: { toolUseId: 'tooluse_0', name: 'read_file', input: { path: 'a.txt' } } }] },
      { role: 'user', content: [{ toolResult: { toolUseId: 'tooluse_0', content: [{ text: PROSE }] } }] },
    ]
    const row = await recorded(s.t, () => post(PATH, { messages }, HEADERS))
    expect(row.estimated).toBe(1)
    expect(row.input_tokens).toBeGreaterThan(AT_LEAST)
  })
})

describe("Bedrock InvokeModelWithResponseStream of other models than Claude: Bedrock's count comes in the last chunk, so every cut stream is estimated", () => {
  const HEADERS = { authorization: 'Bearer ABSKQmVkcm9ja0FQSUtleS1idXJucmF0ZS10ZXN0LTAwMDE=' }
  const ES = 'application/vnd.amazon.eventstream'
  const chunk = (ev: object) => eventMessage('chunk', { bytes: Buffer.from(JSON.stringify(ev)).toString('base64') })
  const cases: [string, string, (p: string) => object][] = [
    ['Llama (generation)', 'us.meta.llama3-3-70b-instruct-v1:0', (p) => ({ generation: p, prompt_token_count: null, generation_token_count: 1, stop_reason: null })],
    ['Mistral (outputs[].text)', 'mistral.mistral-large-2407-v1:0', (p) => ({ outputs: [{ text: p, stop_reason: null }] })],
    ['Nova (contentBlockDelta)', 'us.amazon.nova-pro-v1:0', (p) => ({ contentBlockDelta: { delta: { text: p }, contentBlockIndex: 0 } })],
    ['gpt-oss (chat completion chunks)', 'openai.gpt-oss-120b-1:0', (p) => ({ object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content: p } }] })],
    ['Titan (outputText)', 'amazon.titan-text-premier-v1:0', (p) => ({ outputText: p, index: 0 })],
  ]
  for (const [name, model, ev] of cases) {
    it(`${name}: the text it streamed is counted as output`, async () => {
      streamsThenResets(PIECES.map((p) => chunk(ev(p))), ES)
      const row = await recorded(s.t, () => post(`/bedrock/us-east-1/model/${model}/invoke-with-response-stream`, { prompt: 'Write.' }, HEADERS))
      expect(row.estimated).toBe(1)
      expect(row.output_tokens).toBeGreaterThan(AT_LEAST)
      expect(row.output_tokens).toBeLessThan(3 * AT_LEAST)
    })
  }
})

describe('prompts estimated when the stream is cut before its first usage', () => {
  it('Gemini functionResponse parts (a tool result: a file Gemini CLI read) are counted', async () => {
    streamsThenResets([])
    const body = {
      contents: [
        { role: 'user', parts: [{ text: 'Summarise a.txt' }] },
        { role: 'model', parts: [{ functionCall: { name: 'read_file', args: { path: 'a.txt' } } }] },
        { role: 'user', parts: [{ functionResponse: { name: 'read_file', response: { output: PROSE } } }] },
      ],
    }
    const row = await recorded(s.t, () => post('/gemini/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse', body, { 'x-goog-api-key': 'AIzaSy-review-000000000000000001' }))
    expect(row.estimated).toBe(1)
    expect(row.input_tokens).toBeGreaterThan(AT_LEAST)
  })

  it('Anthropic tool_use blocks in the history (their `input`: a file Claude wrote) are counted', async () => {
    streamsThenResets([])
    const messages = [
      { role: 'user', content: 'Write a.txt' },
      { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_0', name: 'Write', input: { file_path: 'a.txt', content: PROSE } }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_0', content: 'ok' }] },
    ]
    const row = await recorded(s.t, () => post('/anthropic/v1/messages', { model: 'claude-sonnet-4-5', max_tokens: 1024, stream: true, messages }, { 'x-api-key': 'sk-ant-review-estimate-00000001' }))
    expect(row.estimated).toBe(1)
    expect(row.input_tokens).toBeGreaterThan(AT_LEAST)
  })
})
