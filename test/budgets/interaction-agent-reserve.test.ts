import { describe, expect, it } from 'vitest'
import { postJson } from '../support/http'
import { serverOverMockUpstream } from '../support/server'

/**
 * A Gemini interaction run by an agent (`{agent: "deep-research-…", input}`, no `model`): the agent's
 * id is no model of the price data, and its answer names none, so a `block` rule reserved it at $0
 * and let a Deep Research job (minutes of Gemini Pro tokens and searches) start whatever was left
 * of the limit. It is now reserved at the price of the model Google runs its agents on (Gemini 3.1
 * Pro, the dearest Gemini text model of the price data), under either kind of reservation (a
 * background job's reservation is held until a read finds it ended); a call of a named model is
 * reserved at its own price as before.
 */

const LIMIT = 0.02
const s = serverOverMockUpstream({
  timezone: 'UTC',
  budgets: {
    rules: [
      { api_key_pattern: 'AIzaSy-worst-*', daily_limit_usd: LIMIT, action: 'block', reserve: 'max_tokens' },
      { api_key_pattern: 'AIzaSy-expect-*', daily_limit_usd: LIMIT, action: 'block' },
    ],
  },
})

function answerInProgress(): void {
  s.upstream.setResponder(() => ({
    status: 200,
    headers: { 'content-type': 'application/json' },
    body: Buffer.from(JSON.stringify({ id: 'v1_agent', object: 'interaction', agent: 'deep-research-preview-04-2026', status: 'in_progress', role: 'agent', steps: [] })),
  }))
}

const AGENT = { agent: 'deep-research-preview-04-2026', input: 'Research the history of Google TPUs.', background: true }

describe('an interaction run by an agent under a block rule', () => {
  it('reserve: max_tokens: is refused when its worst case at its model\'s price passes the limit, not reserved at $0', async () => {
    answerInProgress()
    const headers = { 'x-goog-api-key': 'AIzaSy-worst-agent-0000000000001' }
    // A small call of a named model fits the limit.
    const small = await postJson(`${s.t.url}/gemini/v1beta/interactions`, { model: 'gemini-2.5-flash-lite', input: 'hi', generation_config: { max_output_tokens: 64 } }, headers)
    expect(small.status).toBe(200)
    const res = await postJson(`${s.t.url}/gemini/v1beta/interactions`, AGENT, headers)
    expect(res.status, res.text).toBe(429)
    expect(res.json().error.type).toBe('budget_exceeded')
  })

  it('reserve: expected: the running job holds its expected cost at its model\'s price (until a read finds it ended), so the key\'s next call is refused', async () => {
    answerInProgress()
    const headers = { 'x-goog-api-key': 'AIzaSy-expect-agent-000000000001' }
    const job = await postJson(`${s.t.url}/gemini/v1beta/interactions`, AGENT, headers)
    expect(job.status).toBe(200)
    const next = await postJson(`${s.t.url}/gemini/v1beta/interactions`, { model: 'gemini-2.5-flash-lite', input: 'hi', generation_config: { max_output_tokens: 64 } }, headers)
    expect(next.status, next.text).toBe(429)
    expect(next.json().error.type).toBe('budget_exceeded')
  })
})
