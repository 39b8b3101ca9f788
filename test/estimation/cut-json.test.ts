import { describe, expect, it } from 'vitest'
import { serverOverMockUpstream } from '../support/server'
import { recorded } from '../providers/ledger'
import { fixture, fixtureJson } from '../support/fixtures'
import { AT_LEAST, PROSE, cutStreams } from './cut-stream'
import { cutBodies, into } from './cut-json-body'

/**
 * A JSON answer (not streamed) cut mid-transfer: the model had finished, so its whole output was
 * billed (a non-streamed answer is sent once generation is over, its usage counted before its
 * first byte), but the usage, at the body's end, never arrived. The output is estimated from the
 * text that did arrive, marked estimated; a usage object that arrived whole is the bill and is
 * taken as it is. (Builds before this one recorded such a call with 0 output tokens.) Real HTTP
 * on 127.0.0.1, the mock upstream replaying test/fixtures answers cut mid-body, the real SQLite ledger.
 */

const s = serverOverMockUpstream()
const { post } = cutStreams(s)
const { sendsThenResets } = cutBodies(s)

describe('Anthropic: a non-streamed answer cut mid-body', () => {
  const KEY = { 'x-api-key': 'sk-ant-estimate-cut-json-00000001' }
  const request = { model: 'claude-sonnet-4-5', max_tokens: 8000, messages: [{ role: 'user', content: 'Write at length.' }] }
  const recordedAnswer = fixtureJson('anthropic/messages-nonstream-basic.json')

  it('cut inside its text: the output is estimated from the text that arrived', async () => {
    const body = Buffer.from(JSON.stringify({ ...recordedAnswer, content: [{ type: 'text', text: PROSE }], usage: { ...recordedAnswer.usage, output_tokens: 2400 } }, null, 2))
    sendsThenResets(body, into(body, 'text', 0.8))
    const row = await recorded(s.t, () => post('/anthropic/v1/messages', request, KEY))
    expect(row).toMatchObject({ provider: 'anthropic', model: 'claude-sonnet-4-5-20250929', streamed: 0, estimated: 1, priced: 1 })
    expect(row.status).not.toBe(200)
    expect(row.input_tokens).toBeGreaterThan(0)
    expect(row.output_tokens).toBeGreaterThan(AT_LEAST)
  })

  it('a usage object that arrived whole before the cut is the bill, as it is', async () => {
    const { usage, ...rest } = recordedAnswer
    const body = Buffer.from(JSON.stringify({ id: rest.id, model: rest.model, usage: { ...usage, input_tokens: 321, output_tokens: 2400 }, ...rest, content: [{ type: 'text', text: PROSE }] }))
    sendsThenResets(body, into(body, 'text', 0.5))
    const row = await recorded(s.t, () => post('/anthropic/v1/messages', request, KEY))
    expect(row).toMatchObject({ provider: 'anthropic', estimated: 0, input_tokens: 321, output_tokens: 2400 })
  })

  it('a run of one character (degenerate output) past the text kept is extrapolated, not counted whole', async () => {
    const body = Buffer.from(JSON.stringify({ ...recordedAnswer, content: [{ type: 'text', text: '='.repeat(6_000_000) }] }))
    sendsThenResets(body, into(body, 'text', 0.9))
    const row = await recorded(s.t, () => post('/anthropic/v1/messages', request, KEY))
    expect(row).toMatchObject({ provider: 'anthropic', estimated: 1 })
    expect(row.output_tokens).toBeGreaterThan(AT_LEAST)
  })
})

describe('OpenAI: a non-streamed Chat Completions answer cut mid-body', () => {
  const KEY = { authorization: 'Bearer sk-proj-estimate-cut-json-000000001' }
  const request = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Summarise the news.' }] }
  /** The recording: 353 completion tokens billed. */
  const body = fixture('openai-chat/chat-nonstream-cached.json')

  it('cut inside its message content: the output is estimated from the text that arrived', async () => {
    sendsThenResets(body, into(body, 'content', 0.75))
    const row = await recorded(s.t, () => post('/openai/v1/chat/completions', request, KEY))
    expect(row).toMatchObject({ provider: 'openai', model: 'gpt-4o-mini-2024-07-18', streamed: 0, estimated: 1, priced: 1 })
    // Three quarters of 353 tokens arrived: within the estimate's 15% of that, never more than the whole.
    expect(row.output_tokens).toBeGreaterThan(0.75 * 353 * 0.85)
    expect(row.output_tokens).toBeLessThanOrEqual(353)
  })

  it('cut after its usage (in system_fingerprint): the usage that arrived is the bill', async () => {
    sendsThenResets(body, body.indexOf('"system_fingerprint"') + 25)
    const row = await recorded(s.t, () => post('/openai/v1/chat/completions', request, KEY))
    expect(row).toMatchObject({ provider: 'openai', estimated: 0, input_tokens: 1149, output_tokens: 353, cache_read_tokens: 1024 })
  })
})
