import { beforeEach, describe, expect, it } from 'vitest'
import { fixture } from '../support/fixtures'
import { postJson } from '../support/http'
import { serverOverMockUpstream } from '../support/server'
import { libraryPrice, recorded } from './ledger'

/**
 * Fast mode for Claude on Vertex AI (the Messages body's `speed: "fast"`; the answer's
 * `usage.speed` says which speed served it) through a running Burnrate: an answer fast mode served
 * is priced at the model's `speed: fast` override (the price data has no Vertex fast prices), one
 * served at standard speed at the list; a stream cut before `message_start` never said which speed
 * served it and is estimated at the speed its request asked for, as on the Claude API (builds
 * before this one estimated a fast one at the standard price).
 */

const MODEL = 'claude-opus-4-6'
/** Made-up fast prices for the test, what a user copies from Google's pricing page. */
const FAST = { model: MODEL, speed: 'fast', input_mtok: 30, output_mtok: 150 }
const s = serverOverMockUpstream({ pricing: { overrides: [FAST] } })

const PATH = `/vertex/v1/projects/my-proj/locations/global/publishers/anthropic/models/${MODEL}`
const HEADERS = { authorization: 'Bearer ya29.a0-burnrate-vertex-fast-0001', 'anthropic-beta': 'fast-mode-2026-02-01' }
const PROMPT = 'Summarise the plot of a long novel in detail. '.repeat(200)
const body = (extra: object) => ({ anthropic_version: 'vertex-2023-10-16', max_tokens: 4096, messages: [{ role: 'user', content: PROMPT }], ...extra })
const fast = (row: any) => (row.input_tokens * FAST.input_mtok + row.output_tokens * FAST.output_mtok) / 1e6

beforeEach(() => {
  s.upstream.requests.length = 0
})

describe('Claude fast mode on Vertex AI', () => {
  it('an answer fast mode served (usage.speed: "fast") is priced at the speed: fast override; one served at standard speed at the list', async () => {
    const answerAt = (speed: string) => s.upstream.setResponder(() => ({
      status: 200,
      headers: { 'content-type': 'application/json' },
      body: Buffer.from(JSON.stringify({ id: 'msg_vrtx_fast', type: 'message', role: 'assistant', model: MODEL, content: [{ type: 'text', text: 'Done.' }], stop_reason: 'end_turn', stop_sequence: null, usage: { input_tokens: 2_000, output_tokens: 300, speed } })),
    }))
    answerAt('fast')
    const served = await recorded(s.t, () => postJson(`${s.t.url}${PATH}:rawPredict`, body({ speed: 'fast' }), HEADERS))
    expect(JSON.parse(s.upstream.requests[0].body.toString())).toMatchObject({ speed: 'fast' })
    expect(served).toMatchObject({ provider: 'vertex', model: MODEL, input_tokens: 2_000, output_tokens: 300, priced: 1, estimated: 0 })
    expect(JSON.parse(served.usage_extra)).toMatchObject({ fast: true })
    expect(served.cost_usd).toBeCloseTo(fast(served), 15)
    answerAt('standard')
    const standard = await recorded(s.t, () => postJson(`${s.t.url}${PATH}:rawPredict`, body({ speed: 'fast' }), HEADERS))
    expect(standard.usage_extra).toBeNull()
    expect(standard.cost_usd).toBe(libraryPrice('google', { input_tokens: 2_000, output_tokens: 300 }, MODEL, standard.ts))
  })

  it('a stream cut before message_start that asked for fast mode is estimated at the fast price, marked fast; one that did not at the list', async () => {
    const cutBeforeStart = () => s.upstream.setResponder(() => ({ status: 200, headers: { 'content-type': 'text/event-stream' }, chunks: [fixture('anthropic/messages-stream-text.sse')], resetAfterChunks: 0, delayMs: 1 }))
    const post = (extra: object) => postJson(`${s.t.url}${PATH}:streamRawPredict`, body({ stream: true, ...extra }), HEADERS).catch(() => undefined)
    cutBeforeStart()
    const row = await recorded(s.t, () => post({ speed: 'fast' }))
    expect(row).toMatchObject({ provider: 'vertex', model: MODEL, estimated: 1, priced: 1 })
    expect(row.input_tokens).toBeGreaterThan(1000)
    expect({ cost: row.cost_usd, extra: row.usage_extra }).toEqual({ cost: expect.closeTo(fast(row), 12), extra: expect.stringContaining('"fast":true') })
    cutBeforeStart()
    const standard = await recorded(s.t, () => post({}))
    expect(standard).toMatchObject({ provider: 'vertex', estimated: 1, priced: 1, usage_extra: null })
    expect(standard.cost_usd).toBe(libraryPrice('google', { input_tokens: standard.input_tokens, output_tokens: standard.output_tokens }, MODEL, standard.ts))
  })
})
