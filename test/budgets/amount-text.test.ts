import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { eventually, postJson } from '../support/http'
import { type MockUpstream, chatPromptAnswer, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'
import { callsOf } from './support'

/**
 * The amounts the proxy writes for a person (X-Burnrate-Budget-Warning, a refusal's message): a
 * spend $0.004 short of its $10.00 limit must not read as the limit itself ("10.00/10.00 USD",
 * "spent $10.00 … $0.004000 left"). One call is 1,000 input tokens of a model priced at $9,996 a
 * million: $9.996.
 */
let upstream: MockUpstream
let t: TestServer

beforeAll(async () => {
  upstream = await startMockUpstream()
  upstream.setResponder(chatPromptAnswer(1000))
  t = await startTestServer(
    {
      timezone: 'UTC',
      pricing: { overrides: [{ model: 'gpt-4o-mini', input_mtok: 9996, output_mtok: 1 }] },
      budgets: {
        rules: [
          { api_key_pattern: 'sk-textwarn-*', daily_limit_usd: 10, action: 'warn', soft_limit_pct: 0.5 },
          { api_key_pattern: 'sk-textblock-*', daily_limit_usd: 10, action: 'block', reserve: 'max_tokens' },
        ],
      },
    },
    upstream.url,
  )
})
afterAll(async () => {
  await t.cleanup()
  await upstream.close()
})

const call = (key: string, body: Record<string, unknown> = {}) =>
  postJson(`${t.url}/v1/chat/completions`, { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], ...body }, { authorization: `Bearer ${key}` })

async function spend(key: string): Promise<void> {
  expect((await call(key)).status).toBe(200)
  await eventually(() => expect(callsOf(t, key)).toHaveLength(1))
}

describe('budget amounts in what the proxy answers', () => {
  it('the warning header of a key at $9.996 of $10.00 says so, not 10.00/10.00', async () => {
    const key = 'sk-textwarn-000000000001'
    await spend(key)
    const r = await call(key)
    expect(r.status).toBe(200)
    expect(r.headers['x-burnrate-budget-warning']).toBe('sk-textwarn-* daily 9.996/10.00 USD')
  })

  it("a call refused for its worst case says what was spent: $9.996, beside the $0.004 left", async () => {
    const key = 'sk-textblock-000000000002'
    await spend(key)
    const r = await call(key, { max_tokens: 1000 })
    expect(r.status).toBe(429)
    const message: string = r.json().error.message
    expect(message).toContain('left of the daily limit of $10.00')
    expect(message).toContain('(spent $9.996)')
  })
})
