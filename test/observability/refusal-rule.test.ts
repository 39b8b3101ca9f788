import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import WebSocket from 'ws'
import { postJson, request } from '../support/http'
import type { MockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'
import { ledgerRows, startFixtureUpstream } from './support'

/**
 * `burnrate_refusals_total{rule}` names the budget rule that refused the call (the
 * `api_key_pattern` the client's 429 names), not the first unscoped rule of the key the call is
 * recorded under: a call refused by a model-scoped rule was counted under the key's general rule,
 * and one refused for another key it carried (budgets check every key) under the recorded key's
 * rule, or `none` (a browser's Realtime socket offering a blocked key as a subprotocol beside the first).
 */

let upstream: MockUpstream
let t: TestServer

beforeAll(async () => {
  upstream = await startFixtureUpstream()
  t = await startTestServer(
    {
      timezone: 'UTC',
      metrics: { enabled: true },
      budgets: {
        rules: [
          { api_key_pattern: 'sk-team-*', daily_limit_usd: 100, action: 'warn' },
          { api_key_pattern: 'sk-team-dev-*', model_pattern: 'gpt-4o-mini', daily_limit_usd: 0, action: 'block' },
          { api_key_pattern: 'sk-blocked-*', daily_limit_usd: 0, action: 'block' },
        ],
      },
    },
    upstream.url,
  )
})
afterAll(async () => {
  await t?.cleanup()
  await upstream?.close()
})

const chat = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }

describe('burnrate_refusals_total', () => {
  it('counts each refusal under the rule that refused it', async () => {
    const fixture = { 'x-fixture': 'openai-chat/chat-nonstream-cached.json' }
    // Refused by the model-scoped rule of its key (its general rule, sk-team-*, only warns).
    const scoped = await postJson(`${t.url}/v1/chat/completions`, chat, { ...fixture, authorization: 'Bearer sk-team-dev-0001' })
    // Recorded under its bearer key (no rule), refused for the other key it carries.
    const other = await postJson(`${t.url}/v1/chat/completions`, chat, { ...fixture, authorization: 'Bearer sk-free-0002', 'x-api-key': 'sk-blocked-0003' })
    expect([scoped.status, other.status]).toEqual([429, 429])
    expect([JSON.parse(scoped.text).error.api_key_pattern, JSON.parse(other.text).error.api_key_pattern]).toEqual(['sk-team-dev-*', 'sk-blocked-*'])
    // A browser's Realtime socket: its calls are the first key's, the second one offered is blocked.
    const upgrade = await new Promise<number>((resolve, reject) => {
      const ws = new WebSocket(`${t.url.replace('http', 'ws')}/v1/realtime?model=gpt-realtime`, ['realtime', 'openai-insecure-api-key.sk-free-0004', 'openai-insecure-api-key.sk-blocked-0005'])
      ws.on('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0))
      ws.on('open', () => reject(new Error('opened')))
      ws.on('error', () => {})
    })
    expect(upgrade).toBe(429)
    t.server.ledger.flush()
    expect(ledgerRows(t.dbFile).map((r) => [r.status, r.error])).toEqual([[429, 'budget_exceeded'], [429, 'budget_exceeded'], [429, 'budget_exceeded']])

    const text = (await request(`${t.url}/metrics`)).text
    expect(text.split('\n').filter((l) => l.startsWith('burnrate_refusals_total{')).sort()).toEqual([
      'burnrate_refusals_total{reason="budget_exceeded",rule="sk-blocked-*"} 2',
      'burnrate_refusals_total{reason="budget_exceeded",rule="sk-team-dev-*"} 1',
    ])
  })
})
