import { describe, expect, it } from 'vitest'
import { postJson } from '../support/http'
import { serverOverMockUpstream } from '../support/server'

/**
 * A Claude request on Vertex AI that asks for fast mode (its Messages body's `speed: "fast"`, as
 * Google documents fast mode for Claude on its platform and Claude Code sends it there) is reserved
 * by a `block` rule at the model's fast price (a `speed: fast` override), as it is billed when fast
 * mode serves it; builds before this one reserved it at the standard price, so it passed a limit
 * its bill would break. Real HTTP on 127.0.0.1, the mock upstream, the real SQLite ledger.
 */

const MODEL = 'claude-opus-4-6'
/** Made-up fast prices for the test (Anthropic's 6x of Opus 4.6's $5 / $25), what a user copies from Google's pricing page. */
const FAST = { model: MODEL, speed: 'fast', input_mtok: 30, output_mtok: 150 }
// 10,000 output tokens: $0.25 at the standard list ($25 per 1M), $1.50 at the fast price.
const MAX_TOKENS = 10_000
const LIMIT = 0.5
const s = serverOverMockUpstream({
  pricing: { overrides: [FAST] },
  budgets: { rules: [{ provider: 'vertex', api_key_pattern: '*', daily_limit_usd: LIMIT, action: 'block', reserve: 'max_tokens' }] },
})

const PATH = `/vertex/v1/projects/my-proj/locations/global/publishers/anthropic/models/${MODEL}`
const HEADERS = { authorization: 'Bearer ya29.a0-burnrate-vertex-fast-reserve-0001', 'anthropic-beta': 'fast-mode-2026-02-01' }
const body = (extra: object) => ({ anthropic_version: 'vertex-2023-10-16', max_tokens: MAX_TOKENS, messages: [{ role: 'user', content: 'hi' }], ...extra })

describe('a Vertex AI Claude request for fast mode under a block rule', () => {
  it('is reserved at the fast price (refused under a limit its standard price fits), on rawPredict and streamRawPredict; a standard one is admitted', async () => {
    s.upstream.setResponder(() => ({
      status: 200,
      headers: { 'content-type': 'application/json' },
      body: Buffer.from(JSON.stringify({ id: 'msg_vrtx_small', type: 'message', role: 'assistant', model: MODEL, content: [{ type: 'text', text: 'ok' }], stop_reason: 'end_turn', stop_sequence: null, usage: { input_tokens: 5, output_tokens: 1 } })),
    }))
    expect((await postJson(`${s.t.url}${PATH}:rawPredict`, body({}), HEADERS)).status).toBe(200)
    expect((await postJson(`${s.t.url}${PATH}:rawPredict`, body({ speed: 'standard' }), HEADERS)).status).toBe(200)
    expect((await postJson(`${s.t.url}${PATH}:rawPredict`, body({ speed: 'fast' }), HEADERS)).status).toBe(429)
    expect((await postJson(`${s.t.url}${PATH}:streamRawPredict`, body({ speed: 'fast', stream: true }), HEADERS)).status).toBe(429)
  })
})
