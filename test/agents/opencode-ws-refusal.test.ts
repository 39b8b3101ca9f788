import { describe, expect, it } from 'vitest'
import { eventually } from '../support/http'
import { ledgerRows } from '../support/ledger-rows'
import { openSocket, rowsAfter, serverOverWsUpstream } from '../support/ws-sessions'

/**
 * opencode 1.18.33's openai provider sends its streamed Responses calls over the Responses
 * WebSocket when the socket is turned on (OPENCODE_EXPERIMENTAL_WEBSOCKETS, or a beta build) and
 * it is logged in to OpenAI (`openai-beta: responses_websockets=2026-02-06`, its session in
 * `x-session-affinity`). An `error` frame as a response's first event becomes the answer to its
 * fetch: the frame's `status`, its `headers` as the response's headers, the whole frame as the
 * body, retried as an HTTP error is (a 429, or any status if the body or message holds "429",
 * "500", "rate limit"...; up to 5 times, each after its Retry-After: for a daily limit, hours).
 * So it gets the refusal it stops on over HTTP, a 403 with the contract's error (not Codex's
 * `usage_limit_reached`), with nothing in the frame its retry patterns match.
 */

const seen: string[] = []
const s = serverOverWsUpstream(
  { onConnection: (ws) => ws.on('message', (d) => seen.push(String(d))) },
  { budgets: { rules: [{ api_key_pattern: 'sk-blocked-*', daily_limit_usd: 0, action: 'block' }] } },
)

// opencode 1.18.33's retry patterns (its session retry), tested against the frame's text and its message.
const OPENCODE_RETRIES = [
  /429|500|502|503|504|524/i,
  /rate increased too quickly|rate limit|rate-limit|rate_limit|too many requests/i,
  /overloaded|service unavailable|service_unavailable|service-unavailable|internal error|internal_error|internal server error|server error|server_error|server-error|provider returned error|provider_returned_error|provider-returned-error/i,
  /terminated|fetch failed|failed to fetch|network[-_\s]error|upstream connect|connection error|connection refused|connection lost|socket connection was closed|socket hang up|reset before headers|getaddrinfo|enotfound|eai_again|econnrefused|econnreset|etimedout/i,
  /^timeout$|\b(?:request|response|connection|network|stream|read) (?:timeout|timed out|time out)\b/i,
  /try your request again|retry your request|resource exhausted|resource_exhausted/i,
  /\btry again (?:later|in\b)|\b(?:currently|temporarily) at capacity\b/i,
]

const SESSION = 'ses_6f7a8b9c0d1eLmNoPqRsTuVwXy'
const OPENCODE = {
  'user-agent': 'opencode/1.18.33',
  'openai-beta': 'responses_websockets=2026-02-06',
  'x-session-affinity': SESSION,
  'x-session-id': SESSION,
}

describe("opencode's Responses WebSocket", () => {
  it("a budget refusal is an error frame with the 403 opencode stops on and the contract's error (budget_exceeded), not Codex's usage_limit_reached", async () => {
    const before = ledgerRows(s.t.dbFile).length
    const c = await openSocket(s.t, '/v1/responses', { headers: { ...OPENCODE, authorization: 'Bearer sk-blocked-opencode-0001' } })
    c.ws.send(JSON.stringify({ type: 'response.create', model: 'gpt-4o', input: [{ role: 'user', content: [{ type: 'input_text', text: 'hi' }] }] }))
    await eventually(() => c.frames.length === 1, 10_000)
    c.ws.close()
    const err = c.frames[0]
    expect(err).toMatchObject({ type: 'error', status: 403, error: { type: 'budget_exceeded', api_key_pattern: 'sk-blocked-*', period: 'daily' } })
    expect(err.error.message).toMatch(/daily limit/)
    // The contract's reset (an ISO time), not Codex's unix seconds.
    expect(err.error.resets_at).toMatch(/^\d{4}-\d\d-\d\dT/)
    // Nothing opencode would retry on, in the body it tests or its message.
    for (const re of OPENCODE_RETRIES) expect(JSON.stringify(err)).not.toMatch(re)
    // Its headers become a Response's: each must be a valid header value.
    expect(() => new Response('', { status: err.status, headers: err.headers })).not.toThrow()
    expect((await rowsAfter(s.t, before, 1))[0]).toMatchObject({ status: 429, error: 'budget_exceeded', agent: 'opencode', session: SESSION })
    expect(seen).toEqual([])
  })

  it('a client of no name on the same socket still gets the contract\'s 429', async () => {
    const c = await openSocket(s.t, '/v1/responses', { headers: { authorization: 'Bearer sk-blocked-opencode-0002' } })
    c.ws.send(JSON.stringify({ type: 'response.create', model: 'gpt-4o', input: 'hi' }))
    await eventually(() => c.frames.length === 1, 10_000)
    c.ws.close()
    expect(c.frames[0]).toMatchObject({ type: 'error', status: 429, error: { type: 'budget_exceeded' } })
    expect(c.frames[0].headers['retry-after']).toBeDefined()
    expect(seen).toEqual([])
  })
})
