import { describe, expect, it } from 'vitest'
import { serverOverMockUpstream } from '../support/server'
import { recorded } from '../providers/ledger'
import { fixtureJson } from '../support/fixtures'
import { AT_LEAST, PROSE, cutStreams } from './cut-stream'
import { cutBodies, into } from './cut-json-body'

/**
 * Bedrock's JSON answers (Converse, and InvokeModel in the model's own format) cut mid-body:
 * billed whole, their usage (near the end) never came. The output is estimated from the text that
 * arrived, marked estimated; a usage that arrived whole, or Bedrock's own count of an InvokeModel
 * call in the answer's headers, is the bill. (Builds before this one recorded such a call, without
 * that header count, with 0 output tokens.) Real HTTP on 127.0.0.1, the mock upstream cutting a
 * recorded answer (test/fixtures; Converse's in the shape of test/providers/bedrock.test.ts) mid-body.
 */

const s = serverOverMockUpstream()
const { post } = cutStreams(s)
const { sendsThenResets } = cutBodies(s)

const HEADERS = { authorization: 'Bearer ABSKQmVkcm9ja0FQSUtleS1jdXQtanNvbi0wMDAx' }
const BASE = '/bedrock/us-east-1'
const CLAUDE = 'us.anthropic.claude-sonnet-4-5-20250929-v1:0'
const LLAMA = 'meta.llama3-3-70b-instruct-v1:0'
const converse = (text: string) => ({
  output: { message: { role: 'assistant', content: [{ text }] } },
  stopReason: 'end_turn',
  usage: { inputTokens: 30, outputTokens: 2400, cacheReadInputTokens: 2000, totalTokens: 4430 },
  metrics: { latencyMs: 5120 },
})

describe('Bedrock Converse: an answer cut mid-body', () => {
  const path = `${BASE}/model/${CLAUDE}/converse`
  const ask = { messages: [{ role: 'user', content: [{ text: 'Write at length.' }] }] }

  it('cut inside its text: the output is estimated from the text that arrived', async () => {
    const body = Buffer.from(JSON.stringify(converse(PROSE)))
    sendsThenResets(body, into(body, 'text', 0.8))
    const row = await recorded(s.t, () => post(path, ask, HEADERS))
    expect(row).toMatchObject({ provider: 'bedrock', endpoint: 'converse', model: CLAUDE, streamed: 0, estimated: 1, priced: 1 })
    expect(row.input_tokens).toBeGreaterThan(0)
    expect(row.output_tokens).toBeGreaterThan(AT_LEAST)
  })

  it('cut after its usage (in metrics): the usage that arrived is the bill', async () => {
    const body = Buffer.from(JSON.stringify(converse(PROSE)))
    sendsThenResets(body, body.indexOf('"latencyMs"') + 4)
    const row = await recorded(s.t, () => post(path, ask, HEADERS))
    expect(row).toMatchObject({ provider: 'bedrock', estimated: 0, input_tokens: 2030, cache_read_tokens: 2000, output_tokens: 2400 })
  })
})

describe('Bedrock InvokeModel: an answer cut mid-body', () => {
  const recordedAnswer = fixtureJson('anthropic/messages-nonstream-basic.json')

  it("a Claude model's answer without Bedrock's header count: estimated from its text, as Anthropic's is", async () => {
    const body = Buffer.from(JSON.stringify({ ...recordedAnswer, content: [{ type: 'text', text: PROSE }] }))
    sendsThenResets(body, into(body, 'text', 0.8))
    const ask = { anthropic_version: 'bedrock-2023-05-31', max_tokens: 8000, messages: [{ role: 'user', content: 'Write at length.' }] }
    const row = await recorded(s.t, () => post(`${BASE}/model/${CLAUDE}/invoke`, ask, HEADERS))
    expect(row).toMatchObject({ provider: 'bedrock', endpoint: 'invoke', model: CLAUDE, streamed: 0, estimated: 1, priced: 1 })
    expect(row.output_tokens).toBeGreaterThan(AT_LEAST)
  })

  it("another model's answer (Llama's generation) without Bedrock's header count: estimated from its text", async () => {
    const body = Buffer.from(JSON.stringify({ generation: PROSE, prompt_token_count: 812, generation_token_count: 2400, stop_reason: 'stop' }))
    sendsThenResets(body, into(body, 'generation', 0.8))
    const row = await recorded(s.t, () => post(`${BASE}/model/${LLAMA}/invoke`, { prompt: 'Write at length.', max_gen_len: 4096 }, HEADERS))
    expect(row).toMatchObject({ provider: 'bedrock', endpoint: 'invoke', model: LLAMA, streamed: 0, estimated: 1, priced: 1 })
    expect(row.output_tokens).toBeGreaterThan(AT_LEAST)
  })

  it("with Bedrock's count in the headers: that count is the bill, not an estimate", async () => {
    const body = Buffer.from(JSON.stringify({ generation: PROSE, prompt_token_count: 812, generation_token_count: 2400, stop_reason: 'stop' }))
    const at = into(body, 'generation', 0.8)
    s.upstream.setResponder(() => ({
      status: 200,
      headers: { 'content-type': 'application/json', 'x-amzn-bedrock-input-token-count': '812', 'x-amzn-bedrock-output-token-count': '2400' },
      chunks: [body.subarray(0, at), Buffer.from(''), body.subarray(at)],
      resetAfterChunks: 2,
      delayMs: 5,
    }))
    const row = await recorded(s.t, () => post(`${BASE}/model/${LLAMA}/invoke`, { prompt: 'Write at length.', max_gen_len: 4096 }, HEADERS))
    expect(row).toMatchObject({ provider: 'bedrock', estimated: 0, input_tokens: 812, output_tokens: 2400 })
  })
})

describe("Bedrock Converse: a toolUse block's input cut mid-body", () => {
  it("its input's JSON that arrived is counted in the output estimate", async () => {
    const answer = { output: { message: { role: 'assistant', content: [{ toolUse: { toolUseId: 't1', name: 'Write', input: { file_path: '/tmp/notes.md', file_content: PROSE } } }] } }, stopReason: 'tool_use', usage: { inputTokens: 30, outputTokens: 2400, totalTokens: 2430 } }
    const body = Buffer.from(JSON.stringify(answer))
    sendsThenResets(body, into(body, 'file_content', 0.8))
    const path = '/bedrock/us-east-1/model/us.anthropic.claude-sonnet-4-5-20250929-v1:0/converse'
    const row = await recorded(s.t, () => post(path, { messages: [{ role: 'user', content: [{ text: 'Write the notes.' }] }] }, { authorization: 'Bearer ABSKQmVkcm9ja0FQSUtleS1jdXQtdG9vbC0wMDAx' }))
    expect(row).toMatchObject({ provider: 'bedrock', streamed: 0, estimated: 1 })
    expect(row.output_tokens).toBeGreaterThan(AT_LEAST)
  })
})
