import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ledgerSpend } from '../../src/main/desktop-logic/spend-source'
import { TrayPresenter } from '../../src/main/desktop-logic/tray-presenter'
import type { TrayView } from '../../src/main/desktop-logic/tray-view'
import { fixture } from '../support/fixtures'
import { eventually, postJson } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'

/**
 * The tray's pace, "out at 13:05", went on reading so after 13:05 until its next refresh (30 s, or
 * the minute set here) when no answer came meanwhile: the tracker draws a later run-out time (or
 * none) only when asked again, and the presenter asked again at a reset but not at a run-out time.
 * It now redraws at the earliest run-out time too. Real server on SQLite, a mock Anthropic whose
 * 5-hour window rose from 90% to 91% in a second: out in about nine seconds at that pace; asked
 * again then, the pace of 1% in ten seconds no longer runs it out before its reset.
 */
let upstream: MockUpstream
let t: TestServer
let presenter: TrayPresenter
let view: TrayView | null = null
let reset = 0
let utilization = '0.90'

beforeAll(async () => {
  upstream = await startMockUpstream(() => ({
    status: 200,
    headers: {
      'content-type': 'application/json',
      'anthropic-ratelimit-unified-5h-utilization': utilization,
      'anthropic-ratelimit-unified-5h-reset': String(reset / 1000),
      'anthropic-ratelimit-unified-5h-status': 'allowed_warning',
      'anthropic-ratelimit-unified-7d-utilization': '0.4',
      'anthropic-ratelimit-unified-7d-reset': String(Math.floor((Date.now() + 3 * 86_400_000) / 1000)),
    },
    body: fixture('anthropic/messages-nonstream-basic.json'),
  }))
  t = await startTestServer({ timezone: 'UTC' }, upstream.url)
  presenter = new TrayPresenter({
    spend: ledgerSpend(t.server.ledger),
    budgets: null,
    plans: t.server.context.plans,
    platform: 'darwin',
    intervalMs: 10,
    refreshMs: 60_000,
    render: (v) => {
      view = v
    },
  })
  presenter.start()
})
afterAll(async () => {
  presenter.stop()
  await t.cleanup()
  await upstream.close()
})

const call = () =>
  postJson(`${t.url}/v1/messages`, { model: 'claude-sonnet-4-5', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }, {
    authorization: 'Bearer sk-ant-oat01-tray-plan-runout-aaaa',
    'anthropic-version': '2023-06-01',
  })

describe("the tray and a plan window's run-out time", () => {
  it('draws the pace again at the run-out time, without waiting for the refresh', async () => {
    // Half a minute ahead: the first run-out (about 9 s after the second reading) comes before it,
    // the next (about 90 s after) does not.
    reset = Math.ceil((Date.now() + 30_000) / 1000) * 1000
    expect((await call()).status).toBe(200)
    const first = Date.now()
    await eventually(() => view?.planLine?.startsWith('5h 90%') === true, 10_000)
    await eventually(() => Date.now() >= first + 1000, 5_000)
    utilization = '0.91'
    expect((await call()).status).toBe(200)
    await eventually(() => view?.planLine?.startsWith('5h 91%') === true && view.planLine.includes(' · out at '), 10_000)
    await eventually(() => view?.planLine?.startsWith('5h 91%') === true && view.planLine.includes(' · on pace for '), reset - Date.now() + 5_000)
  }, 60_000)
})
