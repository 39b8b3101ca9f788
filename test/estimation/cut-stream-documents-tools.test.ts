import { describe, expect, it } from 'vitest'
import { eventMessage } from '../support/event-stream'
import { serverOverMockUpstream } from '../support/server'
import { recorded } from '../providers/ledger'
import { AT_LEAST, PIECES, PROSE, cutStreams, sse } from './cut-stream'

/**
 * Streams cut before their usage, as in ./cut-stream-text-kinds.test.ts, for the rest of the
 * kinds of text a prompt or a stream carries: text documents (a file an agent attached or a tool
 * returned), legacy function calls, code execution, and the Responses API's built-in tools
 * (apply_patch, shell, code interpreter, MCP). Each carries ~2,000 tokens of that kind only.
 */

const s = serverOverMockUpstream()
const { streamsThenResets, post } = cutStreams(s)

describe('text documents in a prompt are counted', () => {
  const ANTHROPIC = { 'x-api-key': 'sk-ant-estimate-documents-000001' }
  const anthropic = (messages: unknown[]) => post('/anthropic/v1/messages', { model: 'claude-sonnet-4-5', max_tokens: 1024, stream: true, messages }, ANTHROPIC)

  it('Anthropic: a plain-text document a tool returned (tool_result content)', async () => {
    streamsThenResets([])
    const messages = [
      { role: 'user', content: 'Summarise a.txt' },
      { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_0', name: 'Read', input: { file_path: 'a.txt' } }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_0', content: [{ type: 'document', source: { type: 'text', media_type: 'text/plain', data: PROSE } }] }] },
    ]
    const row = await recorded(s.t, () => anthropic(messages))
    expect(row.estimated).toBe(1)
    expect(row.input_tokens).toBeGreaterThan(AT_LEAST)
  })

  it("Anthropic: a document of custom content (its source's text blocks)", async () => {
    streamsThenResets([])
    const messages = [{ role: 'user', content: [{ type: 'document', title: 'Notes', source: { type: 'content', content: [{ type: 'text', text: PROSE }] } }, { type: 'text', text: 'Summarise.' }] }]
    const row = await recorded(s.t, () => anthropic(messages))
    expect(row.estimated).toBe(1)
    expect(row.input_tokens).toBeGreaterThan(AT_LEAST)
  })

  it("Bedrock Converse: a text document in a toolResult", async () => {
    streamsThenResets([eventMessage('messageStart', { role: 'assistant' })], 'application/vnd.amazon.eventstream')
    const messages = [
      { role: 'user', content: [{ text: 'Summarise a.txt' }] },
      { role: 'assistant', content: [{ toolUse: { toolUseId: 'tooluse_0', name: 'read_file', input: { path: 'a.txt' } } }] },
      { role: 'user', content: [{ toolResult: { toolUseId: 'tooluse_0', content: [{ document: { format: 'txt', name: 'a', source: { text: PROSE } } }] } }] },
    ]
    const row = await recorded(s.t, () =>
      post('/bedrock/us-east-1/model/us.anthropic.claude-sonnet-4-5-20250929-v1:0/converse-stream', { messages }, { authorization: 'Bearer ABSKQmVkcm9ja0FQSUtleS1idXJucmF0ZS10ZXN0LTAwMDE=' }),
    )
    expect(row.estimated).toBe(1)
    expect(row.input_tokens).toBeGreaterThan(AT_LEAST)
  })
})

describe('tool calls of other kinds in a prompt are counted', () => {
  const OPENAI = { authorization: 'Bearer sk-proj-estimate-documents-000000001' }

  it("Chat Completions: a legacy function_call's arguments in the history", async () => {
    streamsThenResets([])
    const messages = [
      { role: 'user', content: 'Write a.txt' },
      { role: 'assistant', content: null, function_call: { name: 'write_file', arguments: JSON.stringify({ path: 'a.txt', content: PROSE }) } },
      { role: 'function', name: 'write_file', content: 'ok' },
    ]
    const row = await recorded(s.t, () => post('/openai/v1/chat/completions', { model: 'gpt-4o', stream: true, messages }, OPENAI))
    expect(row.estimated).toBe(1)
    expect(row.input_tokens).toBeGreaterThan(AT_LEAST)
  })

  it("Gemini: code execution parts (the code the model ran and what it printed)", async () => {
    streamsThenResets([])
    const half = PROSE.slice(0, PROSE.length / 2)
    const body = {
      contents: [
        { role: 'user', parts: [{ text: 'Compute it.' }] },
        { role: 'model', parts: [{ executableCode: { language: 'PYTHON', code: `print(${JSON.stringify(half)})` } }, { codeExecutionResult: { outcome: 'OUTCOME_OK', output: half } }] },
      ],
    }
    const row = await recorded(s.t, () => post('/gemini/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse', body, { 'x-goog-api-key': 'AIzaSy-estimate-documents-00001' }))
    expect(row.estimated).toBe(1)
    expect(row.input_tokens).toBeGreaterThan(AT_LEAST)
  })

  const items: [string, unknown[]][] = [
    ['an apply_patch_call (its operation: the patch)', [{ type: 'apply_patch_call', call_id: 'c0', status: 'completed', operation: { type: 'create_file', path: 'a.txt', diff: PROSE } }, { type: 'apply_patch_call_output', call_id: 'c0', status: 'completed' }]],
    ['a shell_call and shell_call_output (its commands, and what they printed)', [{ type: 'shell_call', call_id: 'c0', status: 'completed', action: { commands: ['cat a.txt'] } }, { type: 'shell_call_output', call_id: 'c0', output: [{ stdout: PROSE, stderr: '', outcome: { type: 'exit', exit_code: 0 } }] }]],
    ['a code_interpreter_call (its code)', [{ type: 'code_interpreter_call', id: 'ci_0', status: 'completed', container_id: 'cntr_0', code: `print(${JSON.stringify(PROSE)})`, outputs: null }]],
  ]
  for (const [name, history] of items) {
    it(`Responses: ${name} in the history`, async () => {
      streamsThenResets([])
      const input = [{ role: 'user', content: [{ type: 'input_text', text: 'Go on.' }] }, ...history]
      const row = await recorded(s.t, () => post('/openai/v1/responses', { model: 'gpt-5.1', stream: true, input }, OPENAI))
      expect(row.estimated).toBe(1)
      expect(row.input_tokens).toBeGreaterThan(AT_LEAST)
    })
  }
})

describe('tool input of other kinds in a stream is counted as output', () => {
  const OPENAI = { authorization: 'Bearer sk-proj-estimate-documents-000000001' }
  const created = { type: 'response.created', response: { id: 'resp_tools1', object: 'response', model: 'gpt-5.1', status: 'in_progress', usage: null } }
  const events: [string, string][] = [
    ['response.apply_patch_call_operation_diff.delta', 'the patch of the apply_patch tool'],
    ['response.code_interpreter_call_code.delta', 'the code the code interpreter runs'],
    ['response.mcp_call_arguments.delta', "an MCP tool call's arguments"],
  ]
  for (const [type, what] of events) {
    it(`Responses: ${type} (${what})`, async () => {
      streamsThenResets([sse(created, 'response.created'), ...PIECES.map((p) => sse({ type, item_id: 'item_1', output_index: 0, delta: p }, type))])
      const row = await recorded(s.t, () => post('/openai/v1/responses', { model: 'gpt-5.1', stream: true, input: 'Go on.' }, OPENAI))
      expect(row.estimated).toBe(1)
      expect(row.output_tokens).toBeGreaterThan(AT_LEAST)
    })
  }

  it("Chat Completions: a legacy function_call's arguments, streamed", async () => {
    const chunk = (delta: object) => sse({ id: 'chatcmpl-f1', object: 'chat.completion.chunk', model: 'gpt-4o', choices: [{ index: 0, delta }] })
    streamsThenResets([chunk({ role: 'assistant', content: null, function_call: { name: 'write_file', arguments: '' } }), ...PIECES.map((p) => chunk({ function_call: { arguments: p } }))])
    const row = await recorded(s.t, () => post('/openai/v1/chat/completions', { model: 'gpt-4o', stream: true, messages: [{ role: 'user', content: 'Write a.txt' }] }, OPENAI))
    expect(row.estimated).toBe(1)
    expect(row.output_tokens).toBeGreaterThan(AT_LEAST)
  })
})

/**
 * Gemini's code execution tool: the code the model writes (`executableCode` parts) and what it
 * printed (`codeExecutionResult`) are billed as output ("Output tokens: code generated by the
 * model, code execution output in the code environment, summary generated by the model",
 * ai.google.dev/gemini-api/docs/code-execution). A stream cut before any count (Vertex AI's
 * events carry none before the last) is estimated from them.
 */
describe("Gemini: a stream cut while the code execution tool runs", () => {
  const KEY = { 'x-goog-api-key': 'AIzaSy-estimate-code-exec-00000000001' }
  const answer = (part: object) => ({ candidates: [{ content: { role: 'model', parts: [part] }, index: 0 }], modelVersion: 'gemini-2.5-flash' })
  const ask = () => post('/gemini/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse', { contents: [{ role: 'user', parts: [{ text: 'Compute it.' }] }], tools: [{ codeExecution: {} }] }, KEY)

  it('the code it wrote is counted as output', async () => {
    streamsThenResets(PIECES.map((p) => sse(answer({ executableCode: { language: 'PYTHON', code: `print(${JSON.stringify(p)})` } }))))
    const row = await recorded(s.t, ask)
    expect(row.estimated).toBe(1)
    expect(row.output_tokens).toBeGreaterThan(AT_LEAST)
  })

  it('what the code printed is counted as output', async () => {
    streamsThenResets(PIECES.map((p) => sse(answer({ codeExecutionResult: { outcome: 'OUTCOME_OK', output: p } }))))
    const row = await recorded(s.t, ask)
    expect(row.estimated).toBe(1)
    expect(row.output_tokens).toBeGreaterThan(AT_LEAST)
  })
})
