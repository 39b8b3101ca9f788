import { describe, expect, it } from 'vitest'
import { postJson } from '../support/http'
import { serverOverMockUpstream } from '../support/server'

/**
 * OpenRouter's fast tier for Claude (its `service_tier: "fast"`, on its Chat Completions and its
 * Messages API; the Messages API's own `speed: "fast"` was already read) is reserved by a `block`
 * rule at the model's fast price (a `speed: fast` override): builds before this one reserved a
 * `service_tier: "fast"` request at the standard price, so it passed a limit its bill would break.
 */

const SLUG = 'anthropic/claude-opus-4.6'
const FAST = { model: SLUG, speed: 'fast', input_mtok: 30, output_mtok: 150 }
// 10,000 output tokens: $0.25 at OpenRouter's list ($25 per 1M), $1.50 at the fast price.
const MAX_TOKENS = 10_000
const s = serverOverMockUpstream({
  pricing: { overrides: [FAST] },
  budgets: { rules: [{ provider: 'openrouter', api_key_pattern: '*', daily_limit_usd: 0.5, action: 'block', reserve: 'max_tokens' }] },
})
const HEADERS = { authorization: 'Bearer sk-or-v1-fast-reserve-000000000000000001' }

describe("an OpenRouter request for Claude's fast tier under a block rule", () => {
  it('is reserved at the fast price on Chat Completions and the Messages API; a standard one is admitted', async () => {
    s.upstream.setResponder(() => ({
      status: 200,
      headers: { 'content-type': 'application/json' },
      body: Buffer.from(JSON.stringify({ id: 'gen-1', object: 'chat.completion', created: 1, model: SLUG, choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }], usage: { prompt_tokens: 5, completion_tokens: 1, total_tokens: 6, cost: 0.00005 } })),
    }))
    const chat = { model: SLUG, max_tokens: MAX_TOKENS, messages: [{ role: 'user', content: 'hi' }] }
    expect((await postJson(`${s.t.url}/openrouter/v1/chat/completions`, chat, HEADERS)).status).toBe(200)
    expect((await postJson(`${s.t.url}/openrouter/v1/chat/completions`, { ...chat, service_tier: 'fast' }, HEADERS)).status).toBe(429)
    expect((await postJson(`${s.t.url}/openrouter/v1/messages`, { ...chat, service_tier: 'fast' }, HEADERS)).status).toBe(429)
    expect((await postJson(`${s.t.url}/openrouter/v1/messages`, { ...chat, speed: 'fast' }, HEADERS)).status).toBe(429)
  })
})
