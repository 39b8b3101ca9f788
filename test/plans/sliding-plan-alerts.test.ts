import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { PlanNoticeLog, planNotice } from '../../src/main/desktop-logic/tray-plans'
import type { PlanAlert } from '../../src/main/plans/tracker'
import { fixture } from '../support/fixtures'
import { eventually, postJson } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'

// A plan window whose reset slides (a vendor whose reset is "now + what is left" of a rolling
// window, moving with every reading): since c925debe a reset that has slid a minute off the
// period's first starts a new period (for its pace), and each new period's thresholds were told
// again, a desktop notice "5h window at 85%" about every minute while the window stayed over 80%.
// One crossing of a window that has not reset is told once; a window that has reset, or fell back
// under the threshold and crossed it again, is told again.

let headers: Record<string, string> = {}
let upstream: MockUpstream
let t: TestServer

beforeAll(async () => {
  upstream = await startMockUpstream(() => ({ status: 200, headers: { 'content-type': 'text/event-stream', ...headers }, body: fixture('openai-responses/responses-stream-basic.sse') }))
  t = await startTestServer({}, upstream.url)
})
afterAll(async () => {
  await t.cleanup()
  await upstream.close()
})

/** A Codex call whose answer says the 5-hour window is `used`% used and resets at `resetS` (epoch seconds). */
async function call(account: string, used: number, resetS: number) {
  headers = { 'x-codex-primary-used-percent': String(used), 'x-codex-primary-window-minutes': '300', 'x-codex-primary-reset-at': String(resetS) }
  const r = await postJson(`${t.url}/chatgpt/codex/responses`, { model: 'gpt-4o', stream: true, input: 'hi' }, { authorization: `Bearer eyJhbGciOiJSUzI1NiJ9.sliding.${account}`, 'chatgpt-account-id': `acct_${account}` })
  expect(r.status).toBe(200)
}

/** The alerts the tracker tells, and the desktop notices they make. */
function listen() {
  const alerts: PlanAlert[] = []
  const notices: string[] = []
  const log = new PlanNoticeLog()
  const off = t.server.context.plans!.onAlert((a) => {
    alerts.push(a)
    if (log.claim(a)) notices.push(planNotice(a).title)
  })
  return { alerts, notices, off }
}

describe('the alerts of a plan window whose reset slides', () => {
  it('tell one crossing once, however far the reset slides while the window has not reset', async () => {
    const l = listen()
    try {
      const base = Math.floor(Date.now() / 1000) + 2 * 3600
      // Ten readings, the reset 50 s later at each (10 new periods' worth of slide), the window over 80% throughout.
      for (let i = 0; i < 10; i++) await call('aaaa', 85 + i, base + 50 * i)
    } finally {
      l.off()
    }
    expect(l.alerts.map((a) => [a.window, a.threshold])).toEqual([['5h', 0.8]])
    expect(l.notices).toEqual(['ChatGPT plan: 5h window at 85%'])
  })

  it('tell a crossing again once the window has fallen back under the threshold and crossed it anew', async () => {
    const l = listen()
    try {
      const base = Math.floor(Date.now() / 1000) + 2 * 3600
      await call('bbbb', 85, base)
      await call('bbbb', 86, base + 50)
      // Slid a minute off, and under 80% now: re-armed.
      await call('bbbb', 60, base + 100)
      await call('bbbb', 70, base + 150)
      // Over it again, in a period the reset has slid to.
      await call('bbbb', 90, base + 200)
      await call('bbbb', 91, base + 250)
    } finally {
      l.off()
    }
    expect(l.alerts.map((a) => [a.window, a.threshold, a.utilization])).toEqual([['5h', 0.8, 0.85], ['5h', 0.8, 0.9]])
  })

  it('tell a window that has reset again', async () => {
    const l = listen()
    try {
      const first = Math.floor(Date.now() / 1000) + 2
      await call('cccc', 85, first)
      // Its reset passes; the next reading is of the next 5-hour window, over 80% again.
      await eventually(() => Date.now() > first * 1000 + 500, 10_000)
      await call('cccc', 85, Math.floor(Date.now() / 1000) + 5 * 3600)
    } finally {
      l.off()
    }
    expect(l.alerts.map((a) => [a.window, a.threshold])).toEqual([['5h', 0.8], ['5h', 0.8]])
  })
})
