import Anthropic from '@anthropic-ai/sdk'
import OpenAI from 'openai'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'
import { NANO_FIXTURE, callsOf, replayJson } from './support'

let upstream: MockUpstream
let t: TestServer

beforeAll(async () => {
  upstream = await startMockUpstream()
  replayJson(upstream, NANO_FIXTURE)
  t = await startTestServer({ budgets: { rules: [{ api_key_pattern: 'sk-blocked-*', daily_limit_usd: 0, action: 'block' }] } }, upstream.url)
})
afterAll(async () => {
  await t.cleanup()
  await upstream.close()
})

/** The official clients with their default retry policy (2 retries), pointed at the proxy. */
describe('official SDKs surface the budget error without retrying', () => {
  it('openai', async () => {
    const key = 'sk-blocked-openai-aaaaaaaa-0001'
    const client = new OpenAI({ apiKey: key, baseURL: `${t.url}/v1` })
    const err = await client.chat.completions
      .create({ model: 'gpt-5-nano', messages: [{ role: 'user', content: 'hi' }] })
      .then(() => null, (e: unknown) => e)
    expect(err).toBeInstanceOf(OpenAI.RateLimitError)
    const e = err as InstanceType<typeof OpenAI.RateLimitError>
    expect(e.status).toBe(429)
    expect(e.headers.get('x-should-retry')).toBe('false')
    expect((e.error as any).type).toBe('budget_exceeded')
    expect((e.error as any).api_key_pattern).toBe('sk-blocked-*')
    expect(e.message).toMatch(/sk-blocked-\*/)
    // One attempt only: one recorded refusal, nothing upstream.
    expect(callsOf(t, key).map((c) => c.status)).toEqual([429])
    expect(upstream.requests).toHaveLength(0)
  })

  it('@anthropic-ai/sdk', async () => {
    const key = 'sk-blocked-anthropic-bbbbb-0002'
    const client = new Anthropic({ apiKey: key, baseURL: t.url })
    const err = await client.messages
      .create({ model: 'claude-sonnet-4-5', max_tokens: 64, messages: [{ role: 'user', content: 'hi' }] })
      .then(() => null, (e: unknown) => e)
    expect(err).toBeInstanceOf(Anthropic.RateLimitError)
    const e = err as InstanceType<typeof Anthropic.RateLimitError>
    expect(e.status).toBe(429)
    expect(e.headers?.get('x-should-retry')).toBe('false')
    expect(JSON.stringify(e.error)).toContain('budget_exceeded')
    expect(callsOf(t, key).map((c) => c.status)).toEqual([429])
    expect(upstream.requests).toHaveLength(0)
  })
})
