import { describe, expect, it } from 'vitest'
import { serverOverMockUpstream } from '../support/server'
import { recorded } from '../providers/ledger'
import { fixture } from '../support/fixtures'
import { cutStreams } from './cut-stream'
import { cutBodies, into } from './cut-json-body'

/**
 * A model's JSON answer that a gateway labels `text/html` (../faults/html-model-answer.test.ts),
 * cut mid-body: still the model's answer, estimated from the text that arrived as the same bytes
 * labelled JSON are, not recorded at $0 as a web page. A cut JSON body in which no output
 * arrived stays no model's answer ($0, not estimated). Real HTTP on 127.0.0.1, the mock upstream replaying a recorded
 * answer cut mid-body, the real SQLite ledger.
 */

const s = serverOverMockUpstream()
const { post } = cutStreams(s)
const { sendsThenResets } = cutBodies(s)

const HTML = 'text/html; charset=utf-8'
const KEY = { authorization: 'Bearer sk-proj-cut-json-html-000000001' }
const request = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Summarise the news.' }] }
/** The recording: 353 completion tokens billed. */
const body = fixture('openai-chat/chat-nonstream-cached.json')

describe('a JSON answer labelled text/html, cut mid-body', () => {
  it('cut inside its message content: the output is estimated from the text that arrived', async () => {
    sendsThenResets(body, into(body, 'content', 0.75), HTML)
    const row = await recorded(s.t, () => post('/openai/v1/chat/completions', request, KEY))
    expect(row).toMatchObject({ provider: 'openai', model: 'gpt-4o-mini-2024-07-18', streamed: 0, estimated: 1, priced: 1 })
    expect(row.error).not.toBe('not_a_model_answer: text/html')
    expect(row.output_tokens).toBeGreaterThan(0.75 * 353 * 0.85)
    expect(row.output_tokens).toBeLessThanOrEqual(353)
  })

  it('cut after its usage: the usage that arrived is the bill', async () => {
    sendsThenResets(body, body.indexOf('"system_fingerprint"') + 25, HTML)
    const row = await recorded(s.t, () => post('/openai/v1/chat/completions', request, KEY))
    expect(row).toMatchObject({ provider: 'openai', estimated: 0, input_tokens: 1149, output_tokens: 353, cache_read_tokens: 1024 })
  })

  it('cut before any output arrived: not estimated (no model answer is found in it), $0 as before', async () => {
    sendsThenResets(body, body.indexOf('"choices"') + 3, HTML)
    const row = await recorded(s.t, () => post('/openai/v1/chat/completions', request, KEY))
    expect(row).toMatchObject({ provider: 'openai', estimated: 0, input_tokens: 0, output_tokens: 0, cost_usd: 0, error: 'upstream_reset' })
  })
})
