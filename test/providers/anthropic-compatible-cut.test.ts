import { describe, expect, it } from 'vitest'
import { fixture, sseChunks } from '../support/fixtures'
import { postJson } from '../support/http'
import { serverOverMockUpstream } from '../support/server'
import { libraryPrice, recorded } from './ledger'

/**
 * Z.ai's Anthropic-compatible stream (test/fixtures/anthropic-compatible/zai-messages-stream.sse)
 * says 0 tokens in its `message_start` and counts the prompt only in its last `message_delta`.
 * A stream cut before that event (Claude Code's Esc, a reset) has no prompt count at all: the
 * `message_start` zeros are not "the provider's exact prompt counts", as Anthropic's own are, so
 * the prompt is estimated from the request as for any stream cut before its usage. Through a
 * running Burnrate and its real SQLite ledger, the upstream reset mid-stream.
 */

const s = serverOverMockUpstream()
const AUTH = { authorization: 'Bearer sk-vendor-test-token-0000000002', 'anthropic-version': '2023-06-01' }
const PROMPT = 'Summarise the following design notes for the on-call engineer. '.repeat(40)

const PING = Buffer.from('event: ping\ndata: {"type":"ping"}\n\n')

/** Sends the first `events` events of `body`, two pings (the reset may lose what was written just before it), then resets. */
function cutAfter(events: number, body: Buffer): void {
  const chunks = [...sseChunks(body, false).slice(0, events), PING, PING]
  s.upstream.setResponder(() => ({ status: 200, headers: { 'content-type': 'text/event-stream' }, chunks, delayMs: 2, resetAfterChunks: chunks.length }))
}

/** The request; the client sees the reset as a hang-up, which is what is under test, not an error of the test. */
const ask = () => postJson(`${s.t.url}/zai/anthropic/v1/messages`, { model: 'glm-5.3', stream: true, max_tokens: 1024, messages: [{ role: 'user', content: PROMPT }] }, AUTH).catch(() => undefined)

describe("a Z.ai stream cut before its last message_delta", () => {
  it('has its prompt estimated from the request, as a stream cut before any usage has, not recorded at 0 tokens', async () => {
    // The same request cut before anything that counts: the prompt's estimate.
    cutAfter(0, Buffer.alloc(0))
    const before = await recorded(s.t, ask)
    expect(before).toMatchObject({ provider: 'zai', estimated: 1 })
    expect(before.input_tokens).toBeGreaterThan(400)

    // message_start (0 tokens), content_block_start, the text delta "OK"; reset before message_delta.
    cutAfter(3, fixture('anthropic-compatible/zai-messages-stream.sse'))
    const row = await recorded(s.t, ask)
    expect(row).toMatchObject({ provider: 'zai', model: 'glm-5.3', estimated: 1, input_tokens: before.input_tokens })
    expect(row.output_tokens).toBeGreaterThan(0)
    expect(row.cost_usd).toBe(libraryPrice('zai', { input_tokens: row.input_tokens, output_tokens: row.output_tokens }, 'glm-5.3', row.ts))
  })
})
