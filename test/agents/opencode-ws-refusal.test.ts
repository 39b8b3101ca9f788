import { describe, expect, it } from 'vitest'
import { eventually } from '../support/http'
import { ledgerRows } from '../support/ledger-rows'
import { openSocket, rowsAfter, serverOverWsUpstream } from '../support/ws-sessions'

/**
 * opencode 1.18.33's openai provider sends its streamed Responses calls over the Responses
 * WebSocket too (`openai-beta: responses_websockets=2026-02-06`, its session in
 * `x-session-affinity`). An `error` frame is read there for its `status`, `headers` and
 * `error.message` only (its retry follows the status and Retry-After, whatever the error's type),
 * so it gets a refusal in the contract's shape, as over HTTP: Codex's `usage_limit_reached`, with a
 * `resets_at`, is Codex's alone.
 */

const seen: string[] = []
const s = serverOverWsUpstream(
  { onConnection: (ws) => ws.on('message', (d) => seen.push(String(d))) },
  { budgets: { rules: [{ api_key_pattern: 'sk-blocked-*', daily_limit_usd: 0, action: 'block' }] } },
)

const SESSION = 'ses_6f7a8b9c0d1eLmNoPqRsTuVwXy'
const OPENCODE = {
  'user-agent': 'opencode/1.18.33',
  'openai-beta': 'responses_websockets=2026-02-06',
  'x-session-affinity': SESSION,
  'x-session-id': SESSION,
}

describe("opencode's Responses WebSocket", () => {
  it("a budget refusal is an error frame with the contract's error (budget_exceeded), not Codex's usage_limit_reached", async () => {
    const before = ledgerRows(s.t.dbFile).length
    const c = await openSocket(s.t, '/v1/responses', { headers: { ...OPENCODE, authorization: 'Bearer sk-blocked-opencode-0001' } })
    c.ws.send(JSON.stringify({ type: 'response.create', model: 'gpt-4o', input: [{ role: 'user', content: [{ type: 'input_text', text: 'hi' }] }] }))
    await eventually(() => c.frames.length === 1, 10_000)
    c.ws.close()
    const err = c.frames[0]
    expect(err).toMatchObject({ type: 'error', status: 429, error: { type: 'budget_exceeded' } })
    expect(err.error.message).toMatch(/daily limit/)
    // The contract's reset (an ISO time), not Codex's unix seconds.
    expect(err.error.resets_at).toMatch(/^\d{4}-\d\d-\d\dT/)
    expect(err.headers['retry-after']).toBeDefined()
    expect((await rowsAfter(s.t, before, 1))[0]).toMatchObject({ status: 429, error: 'budget_exceeded', agent: 'opencode', session: SESSION })
    expect(seen).toEqual([])
  })
})
