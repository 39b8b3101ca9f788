import { describe, expect, it } from 'vitest'
import { serverOverMockUpstream } from '../support/server'
import { recorded } from '../providers/ledger'
import { AT_LEAST, PROSE, cutStreams } from './cut-stream'

const s = serverOverMockUpstream()
const { streamsThenResets, post } = cutStreams(s)

/**
 * The Gemini API's REST requests take proto field names in snake_case as well as camelCase, and
 * Google's own REST examples write `system_instruction` and `inline_data`: the prompt is the same.
 */
describe('Gemini: a cut stream whose request is written in snake_case', () => {
  it('the system_instruction, function_call and function_response parts count as prompt', async () => {
    const KEY = { 'x-goog-api-key': 'AIzaSy-estimate-snake-000000000000001' }
    const url = '/gemini/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse'
    const ask = (body: object) => recorded(s.t, () => post(url, body, KEY))
    streamsThenResets([])
    const system = await ask({ system_instruction: { parts: [{ text: PROSE }] }, contents: [{ role: 'user', parts: [{ text: 'Hi' }] }] })
    expect(system.estimated).toBe(1)
    expect(system.input_tokens).toBeGreaterThan(AT_LEAST)
    const contents = [
      { role: 'user', parts: [{ text: 'Read it.' }] },
      { role: 'model', parts: [{ function_call: { name: 'read_file', args: { path: 'a.txt' } } }] },
      { role: 'user', parts: [{ function_response: { name: 'read_file', response: { content: PROSE } } }] },
    ]
    const tool = await ask({ contents })
    expect(tool.input_tokens).toBeGreaterThan(AT_LEAST)
  })
})

/**
 * Bedrock InvokeModel bodies in the model's own format: Amazon Titan Text sends its prompt as
 * `inputText`; Cohere Command R as `message`, with `chat_history[].message` and a `preamble`
 * (docs.aws.amazon.com/bedrock: model-parameters-titan-text, model-parameters-cohere-command-r-plus).
 */
describe('Bedrock InvokeModel: a cut stream whose prompt is in Titan or Cohere Command R form', () => {
  const HEADERS = { authorization: 'Bearer ABSKQmVkcm9ja0FQSUtleS1idXJucmF0ZS1zbmFrZS0wMDE=' }
  const cases: [string, string, object][] = [
    ['Titan `inputText`', 'amazon.titan-text-premier-v1:0', { inputText: PROSE, textGenerationConfig: { maxTokenCount: 512 } }],
    ['Cohere `message`', 'cohere.command-r-plus-v1:0', { message: PROSE }],
    ['Cohere `chat_history` and `preamble`', 'cohere.command-r-plus-v1:0', { message: 'Go on.', preamble: PROSE.slice(0, PROSE.length / 2), chat_history: [{ role: 'USER', message: PROSE.slice(PROSE.length / 2) }] }],
  ]
  for (const [name, model, body] of cases) {
    it(`${name} counts as prompt`, async () => {
      streamsThenResets([], 'application/vnd.amazon.eventstream')
      const row = await recorded(s.t, () => post(`/bedrock/us-east-1/model/${model}/invoke-with-response-stream`, body, HEADERS))
      expect(row.estimated).toBe(1)
      expect(row.input_tokens).toBeGreaterThan(AT_LEAST)
    })
  }
})
