import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { calcPrice } from '@pydantic/genai-prices'
import { eventually, postJson } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'
import { callsOf, spentToday } from './support'

/**
 * A project whose default tier is Fast mode (Priority processing): its requests that leave the
 * tier to it (no `service_tier`, or `auto`) are answered `service_tier: "priority"` and billed at
 * the model's Priority prices (gpt-5: $2.50 / $20 per 1M tokens, twice the Standard list), as the
 * recorder prices them. A `reserve: max_tokens` rule must reserve them at that price too, or the
 * calls in flight together take the key to twice its limit.
 */

const OUTPUT = 2000
const BODY = { model: 'gpt-5', input: 'hi', max_output_tokens: OUTPUT }
const BYTES = Buffer.byteLength(JSON.stringify(BODY))
/** The worst case at gpt-5's Standard list: the body's bytes / 3 as input, max_output_tokens as output. */
const STANDARD = calcPrice({ input_tokens: Math.ceil(BYTES / 3), output_tokens: OUTPUT }, 'gpt-5', { providerId: 'openai' })!.total_price
const LIMIT = STANDARD * 10

let upstream: MockUpstream
let t: TestServer

/** A completed Response that used its whole output cap, served by the tier `tier`. */
function answering(tier: string, delay = 0): void {
  upstream.setResponder(() => ({
    status: 200,
    headers: { 'content-type': 'application/json' },
    headerDelayMs: delay,
    body: JSON.stringify({
      id: 'resp_' + Math.random().toString(36).slice(2),
      object: 'response',
      created_at: 1764950000,
      status: 'completed',
      model: 'gpt-5-2025-08-07',
      output: [],
      service_tier: tier,
      usage: { input_tokens: 8, input_tokens_details: { cached_tokens: 0 }, output_tokens: OUTPUT, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 8 + OUTPUT },
    }),
  }))
}

beforeAll(async () => {
  upstream = await startMockUpstream()
  t = await startTestServer({ budgets: { rules: [{ api_key_pattern: 'sk-tier-*', daily_limit_usd: LIMIT, action: 'block', reserve: 'max_tokens' }] } }, upstream.url)
})
afterAll(async () => {
  await t.cleanup()
  await upstream.close()
})

const call = (key: string, body: Record<string, unknown> = BODY) => postJson(`${t.url}/v1/responses`, body, { authorization: `Bearer ${key}` })

describe('reserve: max_tokens, a project whose default tier is Priority', () => {
  it('calls that leave the tier to the project reserve at the Priority price once the key was answered so: 20 at once stay within the limit', async () => {
    const key = 'sk-tier-priority-aaaaaaaa-0001'
    answering('priority')
    expect((await call(key)).status).toBe(200)
    const first = spentToday(t, key)
    expect(first).toBeGreaterThan(STANDARD * 1.9) // billed at Priority: about twice its Standard worst case
    answering('priority', 300)
    const replies = await Promise.all(Array.from({ length: 20 }, (_, i) => call(key, i % 2 ? { ...BODY, service_tier: 'auto' } : BODY)))
    await eventually(() => callsOf(t, key).length === 21, 20_000)
    const ok = replies.filter((r) => r.status === 200).length
    expect(ok).toBeGreaterThan(0)
    expect(spentToday(t, key)).toBeLessThanOrEqual(LIMIT)
  })

  it('a key whose project answers at Standard still reserves the Standard worst case', async () => {
    const key = 'sk-tier-standard-aaaaaaaa-0002'
    answering('default')
    expect((await call(key)).status).toBe(200)
    const first = spentToday(t, key)
    answering('default', 300)
    const replies = await Promise.all(Array.from({ length: 20 }, () => call(key)))
    await eventually(() => callsOf(t, key).length === 21, 20_000)
    // The Standard worst case, as many times as it fits in what the first call left.
    expect(replies.filter((r) => r.status === 200).length).toBe(Math.floor((LIMIT - first) / STANDARD))
    expect(spentToday(t, key)).toBeLessThanOrEqual(LIMIT)
  })
})
