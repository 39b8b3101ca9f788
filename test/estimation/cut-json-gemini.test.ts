import { describe, expect, it } from 'vitest'
import { serverOverMockUpstream } from '../support/server'
import { recorded } from '../providers/ledger'
import { fixtureJson } from '../support/fixtures'
import { AT_LEAST, PROSE, cutStreams } from './cut-stream'
import { cutBodies, into } from './cut-json-body'

/**
 * Gemini's `generateContent` answer (and Vertex AI's Gemini, and Code Assist's wrapped one) cut
 * mid-body: billed whole, its `usageMetadata` (at the end) never came. The output is estimated
 * from the text that arrived, marked estimated; a `usageMetadata` that arrived whole is the bill.
 * (Builds before this one recorded such a call with 0 output tokens.) Real HTTP on 127.0.0.1, the
 * mock upstream replaying a recorded answer (test/fixtures) cut mid-body, the real SQLite ledger.
 */

const s = serverOverMockUpstream()
const { post } = cutStreams(s)
const { sendsThenResets } = cutBodies(s)

/** The recording (gemini-3-pro-preview, 28 + 244 output tokens), its text made long and its model one with a price. */
const recordedAnswer = fixtureJson('gemini/generate-content-thoughts.json')
const answer = (text: string) => ({
  ...recordedAnswer,
  candidates: [{ ...recordedAnswer.candidates[0], content: { role: 'model', parts: [{ text }] } }],
  modelVersion: 'gemini-2.5-flash',
})
const CONTENTS = { contents: [{ role: 'user', parts: [{ text: 'Write at length.' }] }] }

describe('Gemini: a generateContent answer cut mid-body', () => {
  const KEY = { 'x-goog-api-key': 'AIzaSy-cut-json-gemini-000000000001' }
  const PATH = '/gemini/v1beta/models/gemini-2.5-flash:generateContent'

  it('cut inside its text: the output is estimated from the text that arrived', async () => {
    const body = Buffer.from(JSON.stringify(answer(PROSE), null, 2))
    sendsThenResets(body, into(body, 'text', 0.8))
    const row = await recorded(s.t, () => post(PATH, CONTENTS, KEY))
    expect(row).toMatchObject({ provider: 'gemini', model: 'gemini-2.5-flash', streamed: 0, estimated: 1, priced: 1 })
    expect(row.input_tokens).toBeGreaterThan(0)
    expect(row.output_tokens).toBeGreaterThan(AT_LEAST)
  })

  it('a usageMetadata that arrived whole before the cut is the bill, as it is', async () => {
    const { usageMetadata, ...rest } = answer(PROSE)
    const body = Buffer.from(JSON.stringify({ usageMetadata, ...rest }))
    sendsThenResets(body, into(body, 'text', 0.5))
    const row = await recorded(s.t, () => post(PATH, CONTENTS, KEY))
    expect(row).toMatchObject({ provider: 'gemini', estimated: 0, input_tokens: 9, output_tokens: 272, reasoning_tokens: 244 })
  })
})

describe("Vertex AI's Gemini: a generateContent answer cut mid-body", () => {
  it('cut inside its text: the output is estimated from the text that arrived', async () => {
    const body = Buffer.from(JSON.stringify(answer(PROSE)))
    sendsThenResets(body, into(body, 'text', 0.8))
    const path = '/vertex/v1/projects/my-proj/locations/global/publishers/google/models/gemini-2.5-flash:generateContent'
    const row = await recorded(s.t, () => post(path, CONTENTS, { authorization: 'Bearer ya29.a0-cut-json-vertex-0001' }))
    expect(row).toMatchObject({ provider: 'vertex', model: 'gemini-2.5-flash', streamed: 0, estimated: 1 })
    expect(row.output_tokens).toBeGreaterThan(AT_LEAST)
  })
})

describe("Code Assist: a wrapped generateContent answer cut mid-body", () => {
  it('cut inside its text: the output is estimated from the text that arrived', async () => {
    const body = Buffer.from(JSON.stringify({ response: answer(PROSE), traceId: 'cut-json-trace-0001' }))
    sendsThenResets(body, into(body, 'text', 0.8))
    const request = { model: 'gemini-2.5-flash', project: 'burnrate-test-project', request: CONTENTS }
    const row = await recorded(s.t, () => post('/code-assist/v1internal:generateContent', request, { authorization: 'Bearer ya29.a0-cut-json-code-assist-0001' }))
    expect(row).toMatchObject({ provider: 'code-assist', model: 'gemini-2.5-flash', streamed: 0, estimated: 1 })
    expect(row.output_tokens).toBeGreaterThan(AT_LEAST)
  })
})

describe("Gemini: a functionCall's args cut mid-body", () => {
  it("its args' JSON that arrived is counted in the output estimate", async () => {
    const answer = { ...recordedAnswer, candidates: [{ ...recordedAnswer.candidates[0], content: { role: 'model', parts: [{ functionCall: { name: 'write_file', args: { file_path: '/tmp/notes.md', file_content: PROSE } } }] } }], modelVersion: 'gemini-2.5-flash' }
    const body = Buffer.from(JSON.stringify(answer))
    sendsThenResets(body, into(body, 'file_content', 0.8))
    const row = await recorded(s.t, () => post('/gemini/v1beta/models/gemini-2.5-flash:generateContent', { contents: [{ role: 'user', parts: [{ text: 'Write the notes.' }] }] }, { 'x-goog-api-key': 'AIzaSy-cut-json-tool-000000000001' }))
    expect(row).toMatchObject({ provider: 'gemini', streamed: 0, estimated: 1 })
    expect(row.output_tokens).toBeGreaterThan(AT_LEAST)
  })
})
