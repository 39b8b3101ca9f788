import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ledgerSpend } from '../../src/main/desktop-logic/spend-source'
import { TrayPresenter } from '../../src/main/desktop-logic/tray-presenter'
import type { TrayView } from '../../src/main/desktop-logic/tray-view'
import { fixture } from '../support/fixtures'
import { eventually, postJson } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'

/**
 * The tray in the app's own process shows the fullest plan window until its reset, then the next
 * one (or none). Nothing told it of the reset: the tracker speaks only when an answer is read, so
 * a Claude 5-hour window at 97% went on reading "5h 97% · resets 14:20" (the menu-bar title
 * "5h 97%") past 14:20 until the next refresh, which here is a minute away, as it may be when set
 * so. The presenter now redraws at the earliest shown plan window's reset too. Real server on
 * SQLite, a mock Anthropic sending the unified headers of a window that resets in a few seconds.
 */
let upstream: MockUpstream
let t: TestServer
let presenter: TrayPresenter
let view: TrayView | null = null
let reset = 0

beforeAll(async () => {
  upstream = await startMockUpstream(() => ({
    status: 200,
    headers: {
      'content-type': 'application/json',
      'anthropic-ratelimit-unified-5h-utilization': '0.97',
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

describe('the tray and a plan window that resets', () => {
  it('drops the window at its reset and shows the next fullest, without waiting for the refresh', async () => {
    // A whole second (Anthropic sends epoch seconds), 3 to 4 seconds ahead.
    reset = Math.ceil((Date.now() + 3000) / 1000) * 1000
    const r = await postJson(`${t.url}/v1/messages`, { model: 'claude-sonnet-4-5', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }, {
      authorization: 'Bearer sk-ant-oat01-tray-plan-reset-aaaa',
      'anthropic-version': '2023-06-01',
    })
    expect(r.status).toBe(200)
    await eventually(() => view?.planLine?.startsWith('5h 97%') === true, 10_000)
    expect(Date.now()).toBeLessThan(reset)
    expect(view!.title).toContain('5h 97%')
    // After the reset, the 7-day window is the fullest the tray can speak of.
    await eventually(() => view?.planLine?.startsWith('7d 40%') === true, reset - Date.now() + 5_000)
    expect(view!.title).toContain('7d 40%')
  }, 30_000)
})
