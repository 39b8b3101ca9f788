import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fixture } from '../support/fixtures'
import { postJson, request } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'

// The pace of a plan window is the line through its readings. Calls that stop leave no reading:
// a run-out time drawn from the last two is soon behind the clock, while the window stands where
// it was (nothing was used through Burnrate since). A projected run-out is never in the past.

const RESET = Math.floor((Date.now() + 3 * 3600_000) / 1000)
let utilization = 0.2
let upstream: MockUpstream
let t: TestServer

beforeAll(async () => {
  upstream = await startMockUpstream(() => ({
    status: 200,
    headers: {
      'content-type': 'application/json',
      'anthropic-ratelimit-unified-5h-utilization': String(utilization),
      'anthropic-ratelimit-unified-5h-reset': String(RESET),
    },
    body: fixture('anthropic/messages-nonstream-basic.json'),
  }))
  t = await startTestServer({}, upstream.url)
})
afterAll(async () => {
  await t.cleanup()
  await upstream.close()
})

function call(u: number) {
  utilization = u
  return postJson(`${t.url}/v1/messages`, { model: 'claude-sonnet-4-5', max_tokens: 10, messages: [], metadata: { user_id: '' } }, {
    authorization: 'Bearer sk-ant-oat01-pace-plan-token-aaaa',
    'anthropic-version': '2023-06-01',
  })
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

describe('the pace of a plan window after its calls stop', () => {
  it('projects no run-out time that has already passed, on /api/dashboard/plans', async () => {
    expect((await call(0.2)).status).toBe(200)
    await sleep(400)
    // +40% in 0.4 s: at that pace the window runs out 0.6 s after this reading.
    expect((await call(0.6)).status).toBe(200)
    const first = (await request(`${t.url}/api/dashboard/plans`)).json().accounts[0]
    expect(Date.parse(first.windows[0].projected_exhausted_at)).toBeGreaterThan(Date.now())
    // No call for a while: that time has passed, and the window is still at 60%.
    await sleep(1500)
    const asked = Date.now()
    const accounts = (await request(`${t.url}/api/dashboard/plans`)).json().accounts
    const w = accounts[0].windows[0]
    expect(w.utilization).toBe(0.6)
    expect(w.projected_exhausted_at).not.toBeNull()
    expect(Date.parse(w.projected_exhausted_at)).toBeGreaterThanOrEqual(asked)
  })
})
