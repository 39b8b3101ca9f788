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

function call(u: number, token = 'sk-ant-oat01-pace-plan-token-aaaa') {
  utilization = u
  return postJson(`${t.url}/v1/messages`, { model: 'claude-sonnet-4-5', max_tokens: 10, messages: [], metadata: { user_id: '' } }, {
    authorization: `Bearer ${token}`,
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

// Vendors report a window's use in coarse steps (Claude to the hundredth, Codex in whole percent),
// and a busy agent's calls read the same step many times. The pace kept only the last 32 readings,
// so once more than 32 calls had read one step, the line through them was flat: "on pace for 30%"
// of a window that had risen from 20% within the period and was still rising. The line runs from
// the period's first reading, as it says, however many readings came since.
describe('the pace of a plan window read by many calls at one step', () => {
  it('still runs from the period\'s first reading after more than 32 readings', async () => {
    const token = 'sk-ant-oat01-pace-plan-token-bbbb'
    expect((await call(0.2, token)).status).toBe(200)
    await sleep(300)
    for (let i = 0; i < 40; i++) expect((await call(0.3, token)).status).toBe(200)
    const accounts = (await request(`${t.url}/api/dashboard/plans`)).json().accounts
    const w = accounts.find((a: any) => a.account_hint === 'sk-…bbbb').windows[0]
    expect(w.utilization).toBe(0.3)
    // +10% in a second or so: at that pace the window runs out long before its reset, 3 hours away.
    expect(w.projected_exhausted_at).not.toBeNull()
    expect(Date.parse(w.projected_exhausted_at)).toBeLessThan(RESET * 1000)
    expect(w.projected_at_reset).toBe(1)
  })
})
