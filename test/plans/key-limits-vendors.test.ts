import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fixture } from '../support/fixtures'
import { postJson, request } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'

/** What the mock upstream answers next. */
let answer: { status: number; headers: Record<string, string>; body: string | Buffer } = { status: 200, headers: {}, body: '' }

/**
 * The per-key limits vendors send, read as they send them. A reset written with days (`1d2h`) was
 * read as its hours alone (2 h): the parts of a duration were summed where they matched a unit,
 * and `d` was none. No vendor Burnrate knows sends days (Go's and protobuf's durations stop at
 * hours), but a wait is read whole or not at all.
 *
 * OpenRouter sends its own rate limits only on the 429 of one (its free models' requests per minute
 * and per day), as `X-RateLimit-Limit`, `-Remaining` and `-Reset` (the epoch in ms) with no name
 * after them (OpenRouter's Limits docs): Burnrate read only the named family
 * (`x-ratelimit-limit-requests`), so a key out of its free requests showed no window at all.
 */
describe("per-key limits OpenRouter and others send", () => {
  let upstream: MockUpstream
  let t: TestServer

  beforeAll(async () => {
    upstream = await startMockUpstream(() => ({ status: answer.status, headers: { 'content-type': 'application/json', ...answer.headers }, body: answer.body }))
    t = await startTestServer({}, upstream.url)
  })
  afterAll(async () => {
    await t.cleanup()
    await upstream.close()
  })

  const windowsOf = async (provider: string) => {
    const accounts = (await request(`${t.url}/api/dashboard/plans`)).json().accounts as any[]
    return accounts.find((x) => x.provider === provider)?.windows as any[] | undefined
  }

  it("OpenRouter's 429 for its free models' day: window requests, full, until the reset it names", async () => {
    // The next UTC midnight, as OpenRouter resets its free models' day (a fixed date passed is no window).
    const reset = Math.floor(Date.now() / 86_400_000 + 1) * 86_400_000
    answer = {
      status: 429,
      headers: { 'X-RateLimit-Limit': '50', 'X-RateLimit-Remaining': '0', 'X-RateLimit-Reset': String(reset) },
      body: JSON.stringify({
        error: {
          message: 'Rate limit exceeded: free-models-per-day. Add 10 credits to unlock 1000 free model requests per day',
          code: 429,
          metadata: { headers: { 'X-RateLimit-Limit': '50', 'X-RateLimit-Remaining': '0', 'X-RateLimit-Reset': String(reset) }, provider_name: null },
        },
      }),
    }
    const r = await postJson(`${t.url}/openrouter/v1/chat/completions`, { model: 'meta-llama/llama-3.3-70b-instruct:free', messages: [{ role: 'user', content: 'hi' }] }, { authorization: 'Bearer sk-or-v1-test-000000000001' })
    expect(r.status).toBe(429)
    const windows = await windowsOf('openrouter')
    expect(windows).toHaveLength(1)
    expect(windows![0]).toMatchObject({ name: 'requests', utilization: 1, status: 'rejected' })
    expect(Date.parse(windows![0].resets_at)).toBe(reset)
  })

  it('a reset given in days (1d2h) is 26 hours away, not 2', async () => {
    answer = {
      status: 200,
      headers: {
        'x-ratelimit-limit-requests': '14400',
        'x-ratelimit-remaining-requests': '14000',
        'x-ratelimit-reset-requests': '1d2h',
      },
      body: fixture('openai-chat/chat-nonstream-cached.json'),
    }
    const before = Date.now()
    const r = await postJson(`${t.url}/groq/v1/chat/completions`, { model: 'llama-3.3-70b-versatile', messages: [{ role: 'user', content: 'hi' }] }, { authorization: 'Bearer gsk-test-000000000002' })
    const after = Date.now()
    expect(r.status).toBe(200)
    const windows = await windowsOf('groq')
    const at = Date.parse(windows!.find((w) => w.name === 'requests').resets_at)
    expect(at).toBeGreaterThanOrEqual(before + 26 * 3_600_000 - 1000)
    expect(at).toBeLessThanOrEqual(after + 26 * 3_600_000 + 1000)
  })
})
