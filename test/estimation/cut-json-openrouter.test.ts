import { describe, expect, it } from 'vitest'
import { serverOverMockUpstream } from '../support/server'
import { recorded } from '../providers/ledger'
import { fixtureJson } from '../support/fixtures'
import { AT_LEAST, PROSE, cutStreams } from './cut-stream'
import { cutBodies, into } from './cut-json-body'

/**
 * OpenRouter's Anthropic Messages API (`…/openrouter/v1/messages`, Claude Code's setup) answering
 * with a JSON body cut mid-transfer: metered as Anthropic's answer cut so is (its text estimated,
 * a usage that arrived whole the bill), and OpenRouter's `usage.cost` in such a usage the charge.
 * (Builds before this one recorded such a call with 0 output tokens.) Real HTTP on 127.0.0.1, the
 * mock upstream replaying a recorded Anthropic answer cut mid-body, the real SQLite ledger.
 */

const s = serverOverMockUpstream()
const { post } = cutStreams(s)
const { sendsThenResets } = cutBodies(s)

const MODEL = 'anthropic/claude-sonnet-4.5'
const HEADERS = { authorization: 'Bearer sk-or-v1-cut-json-000000000001', 'anthropic-version': '2023-06-01' }
const request = { model: MODEL, max_tokens: 8000, messages: [{ role: 'user', content: 'Write at length.' }] }
const recordedAnswer = fixtureJson('anthropic/messages-nonstream-basic.json')

describe("OpenRouter's Messages API: a non-streamed answer cut mid-body", () => {
  it('cut inside its text: the output is estimated from the text that arrived', async () => {
    const body = Buffer.from(JSON.stringify({ ...recordedAnswer, content: [{ type: 'text', text: PROSE }] }))
    sendsThenResets(body, into(body, 'text', 0.8))
    const row = await recorded(s.t, () => post('/openrouter/v1/messages', request, HEADERS))
    expect(row).toMatchObject({ provider: 'openrouter', endpoint: 'messages', model: MODEL, streamed: 0, estimated: 1, priced: 1 })
    expect(row.output_tokens).toBeGreaterThan(AT_LEAST)
  })

  it('a usage that arrived whole before the cut is the bill, its cost the charge', async () => {
    const { usage, ...rest } = recordedAnswer
    const body = Buffer.from(JSON.stringify({ id: rest.id, usage: { ...usage, input_tokens: 321, output_tokens: 2400, cost: 0.0456789 }, ...rest, content: [{ type: 'text', text: PROSE }] }))
    sendsThenResets(body, into(body, 'text', 0.5))
    const row = await recorded(s.t, () => post('/openrouter/v1/messages', request, HEADERS))
    expect(row).toMatchObject({ provider: 'openrouter', estimated: 0, input_tokens: 321, output_tokens: 2400 })
    expect(row.cost_usd).toBe(0.0456789)
  })
})
