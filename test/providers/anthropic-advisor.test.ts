import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ADMIN_CONFIG, admin } from '../admin/support'
import { postJson } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'
import { answer, libraryPrice, recorded, rows } from './ledger'

/**
 * Claude's advisor tool (`advisor_20260301`, Claude Code's `/advisor`): the executor model (the
 * request's `model`) consults a stronger advisor model server-side, in the same call. The answer's
 * `usage.iterations` then lists the executor's sampling iterations (`type: "message"`, which the
 * top-level usage sums) and one `advisor_message` per consultation, which names the model that
 * ran it and is billed at that model's rates (the Messages API reference: "Token usage for an
 * advisor sub-inference iteration", with its `model`; Claude Code's advisor page: advisor calls
 * are billed at the advisor model's own rates, on top of the main model's). Through a running
 * Burnrate and its real SQLite ledger; the dollars by hand from Anthropic's list: Claude Sonnet
 * 4.6 $3 input, $3.75 5-minute cache write, $0.30 cache read, $15 output per million; Claude
 * Haiku 4.5 $1, $1.25, $0.10, $5; Claude Opus 4.6 $5 input, $25 output.
 */

let upstream: MockUpstream
let t: TestServer

beforeAll(async () => {
  upstream = await startMockUpstream()
  t = await startTestServer(ADMIN_CONFIG, upstream.url)
})
afterAll(async () => {
  await t.cleanup()
  await upstream.close()
})

const KEY = { 'x-api-key': 'sk-ant-advisor-00000000000001' }
const ADVISOR = 'claude-opus-4-6'
const cache = (m5: number) => ({ ephemeral_5m_input_tokens: m5, ephemeral_1h_input_tokens: 0 })

/** The executor's two iterations around one consultation of the advisor, as the API reference shapes them. */
const ITERATIONS = [
  { type: 'message', input_tokens: 2, cache_read_input_tokens: 27_000, cache_creation_input_tokens: 3_500, cache_creation: cache(3_500), output_tokens: 120 },
  { type: 'advisor_message', model: ADVISOR, input_tokens: 30_000, cache_read_input_tokens: 0, cache_creation_input_tokens: 0, cache_creation: cache(0), output_tokens: 1_600 },
  { type: 'message', input_tokens: 2, cache_read_input_tokens: 30_500, cache_creation_input_tokens: 460, cache_creation: cache(460), output_tokens: 400 },
]
/** The top-level usage: the executor's, the sum of its `message` iterations. */
const TOP = { input_tokens: 4, cache_read_input_tokens: 57_500, cache_creation_input_tokens: 3_960, cache_creation: cache(3_960), output_tokens: 520 }

/** The executor's tokens, the advisor's: together what the ledger's token columns hold. */
const TOKENS = { input_tokens: 4 + 3_960 + 57_500 + 30_000, cache_read_tokens: 57_500, cache_write_tokens: 3_960, output_tokens: 520 + 1_600 }
/** Opus 4.6 for the advisor's 30,000 input and 1,600 output tokens. */
const ADVISOR_USD = (30_000 * 5 + 1_600 * 25) / 1e6

function stream(model: string): string {
  const event = (type: string, data: object) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`
  const first = { input_tokens: 2, cache_read_input_tokens: 27_000, cache_creation_input_tokens: 3_500, cache_creation: cache(3_500), output_tokens: 1 }
  return (
    event('message_start', { message: { id: 'msg_adv_s', type: 'message', role: 'assistant', model, content: [], stop_reason: null, stop_sequence: null, usage: first } }) +
    event('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }) +
    event('content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'Done, as advised.' } }) +
    event('content_block_stop', { index: 0 }) +
    event('message_delta', { delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { ...TOP, iterations: ITERATIONS } }) +
    event('message_stop', {})
  )
}

const request = (model: string, streamed: boolean) =>
  postJson(`${t.url}/v1/messages`, { model, stream: streamed, max_tokens: 4_000, tools: [{ type: 'advisor_20260301', name: 'advisor', model: ADVISOR }], messages: [] }, KEY)

describe("Claude's advisor tool", () => {
  it("a stream: the advisor's tokens at the advisor model's rates, the executor's at its own", async () => {
    const model = 'claude-sonnet-4-6'
    answer(upstream, stream(model), 'sse')
    const row = await recorded(t, () => request(model, true))
    expect(row).toMatchObject({ provider: 'anthropic', model, ...TOKENS, priced: 1, estimated: 0 })
    const executor = (4 * 3 + 3_960 * 3.75 + 57_500 * 0.3 + 520 * 15) / 1e6
    expect(row.cost_usd).toBeCloseTo(executor + ADVISOR_USD, 12)
    // Each part is the library's price of it at its own model.
    const sonnet = libraryPrice('anthropic', { input_tokens: 4 + 3_960 + 57_500, cache_read_tokens: 57_500, cache_write_tokens: 3_960, output_tokens: 520 }, model, row.ts)
    expect(row.cost_usd).toBe(sonnet + libraryPrice('anthropic', { input_tokens: 30_000, output_tokens: 1_600 }, ADVISOR, row.ts))
    expect(JSON.parse(row.usage_extra)).toEqual({ advisor: { [ADVISOR]: { input_tokens: 30_000, output_tokens: 1_600 } } })
  })

  it('a JSON answer of Haiku 4.5 advised by Opus: the advice costs five times what Haiku would; re-pricing keeps it so', async () => {
    const model = 'claude-haiku-4-5-20251001'
    answer(upstream, { id: 'msg_adv_j', type: 'message', role: 'assistant', model, content: [], stop_reason: 'end_turn', usage: { ...TOP, iterations: ITERATIONS } })
    const row = await recorded(t, () => request(model, false))
    expect(row).toMatchObject({ model, ...TOKENS, priced: 1 })
    const executor = (4 * 1 + 3_960 * 1.25 + 57_500 * 0.1 + 520 * 5) / 1e6
    expect(row.cost_usd).toBeCloseTo(executor + ADVISOR_USD, 12)

    // Re-pricing the call (the admin API, after a price change) prices the advice at Opus again.
    expect((await admin(t.url, 'PUT', `/prices/anthropic/${model}`, { body: { input_mtok: 2, output_mtok: 10 } })).status).toBe(200)
    expect((await admin(t.url, 'POST', `/prices/anthropic/${model}/reprice?all=true`)).status).toBe(200)
    // Haiku at $2 / $10 (its cache rates Anthropic's multiples: $2.50 writes, $0.20 reads), the advice at Opus.
    const repriced = rows(t).find((x) => x.id === row.id)
    expect(repriced.cost_usd).toBeCloseTo((4 * 2 + 3_960 * 2.5 + 57_500 * 0.2 + 520 * 10) / 1e6 + ADVISOR_USD, 12)
  })
})
