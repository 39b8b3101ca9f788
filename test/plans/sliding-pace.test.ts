import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fixture } from '../support/fixtures'
import { postJson, request } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'

// A key's rate limit whose reset is "now + duration" (Groq's and OpenAI's x-ratelimit-reset-*,
// "1m2s") is a sliding window: each answer names a reset a little later than the one before, and
// while an agent is busy every reading is within a drift of the latest. Kept as one period with its
// first reading for good, the pace ran from a reading of long ago: a window that had since fallen
// and was rising again read as falling (no run-out time). A reset that has slid from the period's
// first is a new period, its pace from the reading before it.

let headers: Record<string, string> = {}
let upstream: MockUpstream
let t: TestServer

beforeAll(async () => {
  upstream = await startMockUpstream(() => ({
    status: 200,
    headers: { 'content-type': 'application/json', ...headers },
    body: fixture('openai-chat/chat-nonstream-cached.json'),
  }))
  t = await startTestServer({}, upstream.url)
})
afterAll(async () => {
  await t.cleanup()
  await upstream.close()
})

/** A Groq answer whose requests window resets `resetS` seconds from now with `remaining` of 1000 left. */
function call(remaining: number, resetS: number) {
  headers = {
    'x-ratelimit-limit-requests': '1000',
    'x-ratelimit-remaining-requests': String(remaining),
    'x-ratelimit-reset-requests': `${Math.floor(resetS / 60)}m${resetS % 60}s`,
  }
  return postJson(`${t.url}/groq/v1/chat/completions`, { model: 'llama-3.3-70b-versatile', messages: [{ role: 'user', content: 'hi' }] }, { authorization: 'Bearer gsk-test-sliding-000000000001' })
}

describe('the pace of a sliding key window', () => {
  it('runs from recent readings, not from the first of a reset that has slid for long', async () => {
    // Long ago (as the reset says): half the window used.
    expect((await call(500, 600)).status).toBe(200)
    // Since, the reset slid 50 s per reading (each within a drift of the one before) and use fell
    // to 10% and has risen steadily since.
    for (let i = 1; i <= 8; i++) expect((await call(900 - 10 * i, 600 + 50 * i)).status).toBe(200)
    const accounts = (await request(`${t.url}/api/dashboard/plans`)).json().accounts as any[]
    const w = accounts.find((a) => a.provider === 'groq').windows.find((x: any) => x.name === 'requests')
    expect(w.utilization).toBeCloseTo(0.18, 10)
    // Rising: at this pace it runs out before its reset (15 minutes away).
    expect(w.projected_exhausted_at).not.toBeNull()
    expect(w.projected_at_reset).toBe(1)
  })
})
