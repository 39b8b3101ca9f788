import { describe, expect, it } from 'vitest'
import { eventually, postJson } from '../support/http'
import { serverOverMockUpstream } from '../support/server'
import { callsOf } from './support'

/**
 * A Mistral Agents API call (`POST /v1/agents/completions`, `{agent_id, messages}`) names no
 * model: only its answer does (the agent's). Its reservation against a `block` rule must still be
 * priced, as an Azure deployment's is after its first answer (test/budgets/azure-deployments.test.ts),
 * or calls in flight at once each reserve $0 and overshoot the limit together.
 */
const LIMIT = 0.001
const s = serverOverMockUpstream({
  budgets: { rules: [{ api_key_pattern: 'mistral-*', daily_limit_usd: LIMIT, action: 'block', reserve: 'max_tokens' }] },
})

// mistral-medium-2508 ($0.40 / $2 per 1M): 250 input and 100 output tokens, $0.0003 a call; max_tokens 500 bounds one at about $0.001.
const ANSWER = JSON.stringify({
  id: 'cmpl-agent-burst',
  object: 'chat.completion',
  created: 1787866434,
  model: 'mistral-medium-2508',
  choices: [{ index: 0, finish_reason: 'stop', message: { role: 'assistant', content: 'Done.' } }],
  usage: { prompt_tokens: 250, completion_tokens: 100, total_tokens: 350 },
})

function spent(key: string): { calls: number; cost: number } {
  const answered = callsOf(s.t, key).filter((r) => r.status === 200)
  return { calls: answered.length, cost: answered.reduce((sum, r) => sum + r.cost_usd, 0) }
}

const call = (key: string) =>
  postJson(`${s.t.url}/mistral/v1/agents/completions`, { agent_id: 'ag_0123456789', max_tokens: 500, messages: [{ role: 'user', content: 'hi' }] }, { authorization: `Bearer ${key}` })

describe('reserve: max_tokens on Mistral agents', () => {
  it("after an agent's first answer, its calls in flight at once are reserved at its model's price, and the limit holds", async () => {
    const key = 'mistral-agent-key-00000001'
    s.upstream.setResponder(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body: ANSWER }))
    expect((await call(key)).status).toBe(200)
    await eventually(() => (spent(key).calls === 1 ? true : undefined))
    // Ten calls at once, each answered after 300 ms: all in flight together.
    s.upstream.setResponder(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body: ANSWER, headerDelayMs: 300 }))
    const statuses = (await Promise.all(Array.from({ length: 10 }, () => call(key)))).map((r) => r.status)
    expect(statuses).toContain(429)
    const ok = statuses.filter((x) => x === 200).length
    await eventually(() => (spent(key).calls === ok + 1 ? true : undefined))
    expect(spent(key).cost).toBeLessThanOrEqual(LIMIT)
  })
})
