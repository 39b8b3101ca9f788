import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'
import { NANO_FIXTURE, chat, replayJson } from './support'

/** A `warn` rule's per-minute request limit: the call over it says so, counting itself (README: `rate 61/60`). */
let upstream: MockUpstream
let t: TestServer
beforeAll(async () => {
  upstream = await startMockUpstream()
  replayJson(upstream, NANO_FIXTURE)
  t = await startTestServer({ budgets: { rules: [{ api_key_pattern: 'sk-wrate-*', requests_per_minute: 2, action: 'warn' }] } }, upstream.url)
})
afterAll(async () => {
  await t.cleanup()
  await upstream.close()
})

describe('a warn rule over its requests per minute', () => {
  it('lets the calls through, the third with "rate 3/2 requests per minute"', async () => {
    const key = 'sk-wrate-aaaaaaaa-0001'
    const replies = []
    for (let i = 0; i < 3; i++) replies.push(await chat(t, key))
    expect(replies.map((r) => r.status)).toEqual([200, 200, 200])
    expect(replies[0].headers['x-burnrate-budget-warning']).toBeUndefined()
    expect(replies[2].headers['x-burnrate-budget-warning']).toBe('sk-wrate-* rate 3/2 requests per minute')
  })
})
