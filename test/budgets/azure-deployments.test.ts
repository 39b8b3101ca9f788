import { describe, expect, it } from 'vitest'
import { fixture } from '../support/fixtures'
import { eventually, postJson } from '../support/http'
import { serverOverMockUpstream } from '../support/server'
import { callsOf } from './support'

/**
 * An Azure deployment is named by its owner (`prod-chat`, `model-router`), not by a model, and a
 * call to one is recorded at the price of the model its answer names. Its reservation against a
 * `block` rule used to be priced by the deployment's name, which has no price: $0, so calls in
 * flight at once were never refused for what they would cost. Now a name with no price is
 * reserved at the price of the model its last answered call named (`providers.azure.deployments`
 * still names it from the first call).
 */
const LIMIT = 0.001
const s = serverOverMockUpstream({
  providers: { azure: { deployments: { mapped: 'gpt-4o-mini' } } },
  budgets: { rules: [{ api_key_pattern: 'azure-*', daily_limit_usd: LIMIT, action: 'block', reserve: 'max_tokens' }] },
})

// gpt-4o-mini, about $0.0003 a call; max_tokens 500 bounds one at about the same.
const BODY = fixture('openai-chat/chat-nonstream-cached.json')

/** The key's answered calls, as recorded: how many and what they cost. */
function spent(key: string): { calls: number; cost: number } {
  const answered = callsOf(s.t, key).filter((r) => r.status === 200)
  return { calls: answered.length, cost: answered.reduce((sum, r) => sum + r.cost_usd, 0) }
}

const call = (deployment: string, key: string) =>
  postJson(`${s.t.url}/azure/openai/deployments/${deployment}/chat/completions?api-version=2024-10-21`, { max_tokens: 500, messages: [{ role: 'user', content: 'hi' }] }, { 'api-key': key })

/** Ten calls at once, each answered after 300 ms: all in flight together. */
async function burst(deployment: string, key: string): Promise<number[]> {
  s.upstream.setResponder(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body: BODY, headerDelayMs: 300 }))
  return (await Promise.all(Array.from({ length: 10 }, () => call(deployment, key)))).map((r) => r.status)
}

describe('reserve: max_tokens on Azure deployments', () => {
  it('a deployment mapped to its model in the config: the limit holds from the first call', async () => {
    const key = 'azure-key-mapped-000000001'
    const statuses = await burst('mapped', key)
    expect(statuses).toContain(429)
    await eventually(() => (spent(key).calls === statuses.filter((x) => x === 200).length ? true : undefined))
    expect(spent(key).cost).toBeLessThanOrEqual(LIMIT)
  })

  it('a deployment named for no model: after its first answer, its calls are reserved at the price of the model that answered, and the limit holds', async () => {
    const key = 'azure-key-router-000000001'
    s.upstream.setResponder(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body: BODY }))
    expect((await call('model-router', key)).status).toBe(200)
    await eventually(() => (spent(key).calls === 1 ? true : undefined))
    const statuses = await burst('model-router', key)
    expect(statuses).toContain(429)
    const ok = statuses.filter((x) => x === 200).length
    await eventually(() => (spent(key).calls === ok + 1 ? true : undefined))
    expect(spent(key).cost).toBeLessThanOrEqual(LIMIT)
    expect(spent(key).cost).toBeGreaterThan(0)
  })
})
