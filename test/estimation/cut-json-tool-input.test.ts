import { describe, expect, it } from 'vitest'
import { serverOverMockUpstream } from '../support/server'
import { recorded } from '../providers/ledger'
import { fixtureJson } from '../support/fixtures'
import { AT_LEAST, PROSE, cutStreams } from './cut-stream'
import { cutBodies, into } from './cut-json-body'

/**
 * A non-streamed Anthropic answer cut mid-body inside a tool call's input (a file an agent writes): that
 * input is an object, not text, but it is output the model wrote and was billed for, so its JSON
 * text that arrived is counted in the estimate, as a stream's `input_json_delta` pieces are.
 * (Builds before this one counted none of it. Bedrock Converse's `toolUse.input` and Gemini's
 * `functionCall.args`: ./cut-json-bedrock.test.ts, ./cut-json-gemini.test.ts.) Real HTTP on 127.0.0.1, the mock upstream cutting
 * a recorded answer (test/fixtures) mid-body, the real SQLite ledger.
 */

const s = serverOverMockUpstream()
const { post } = cutStreams(s)
const { sendsThenResets } = cutBodies(s)

/** A tool call writing PROSE to a file. */
const WRITE = { file_path: '/tmp/notes.md', file_content: PROSE }

describe("Anthropic: a tool_use block's input cut mid-body", () => {
  const KEY = { 'x-api-key': 'sk-ant-estimate-cut-json-tool-0001' }
  const request = { model: 'claude-sonnet-4-5', max_tokens: 8000, messages: [{ role: 'user', content: 'Write the notes.' }] }
  const recordedAnswer = fixtureJson('anthropic/messages-nonstream-basic.json')

  it("its input's JSON that arrived is counted in the output estimate", async () => {
    const content = [
      { type: 'text', text: 'Writing the notes.' },
      { type: 'tool_use', id: 'toolu_01', name: 'Write', input: WRITE },
    ]
    const body = Buffer.from(JSON.stringify({ ...recordedAnswer, content, stop_reason: 'tool_use' }))
    sendsThenResets(body, into(body, 'file_content', 0.8))
    const row = await recorded(s.t, () => post('/anthropic/v1/messages', request, KEY))
    expect(row).toMatchObject({ provider: 'anthropic', streamed: 0, estimated: 1 })
    expect(row.output_tokens).toBeGreaterThan(AT_LEAST)
  })

  it('an input that arrived whole is counted once, not also its strings as text', async () => {
    const content = [{ type: 'tool_use', id: 'toolu_01', name: 'Write', input: { text: PROSE } }]
    const body = Buffer.from(JSON.stringify({ ...recordedAnswer, content, stop_reason: 'tool_use', usage: undefined, tail: 'x'.repeat(100) }))
    sendsThenResets(body, body.indexOf('"tail"') + 10)
    const row = await recorded(s.t, () => post('/anthropic/v1/messages', request, KEY))
    expect(row).toMatchObject({ provider: 'anthropic', estimated: 1 })
    expect(row.output_tokens).toBeGreaterThan(AT_LEAST)
    expect(row.output_tokens).toBeLessThan(3 * AT_LEAST)
  })
})
