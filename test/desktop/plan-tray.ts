import { afterAll, beforeAll } from 'vitest'
import { ledgerSpend } from '../../src/main/desktop-logic/spend-source'
import { TrayPresenter } from '../../src/main/desktop-logic/tray-presenter'
import type { TrayView } from '../../src/main/desktop-logic/tray-view'
import { fixture } from '../support/fixtures'
import { postJson } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'

/**
 * The tray in the app's own process (a presenter refreshing only every minute) on a real server on
 * SQLite, whose mock Anthropic sends a Claude plan's unified headers: a 5-hour window at the
 * utilization and reset the test sets, and a 7-day one at 40%. Registers its own set-up and
 * teardown; `view()` is the tray's last drawing, `call(key)` one plan call.
 */
export function planTray() {
  const state = { utilization: '0.97', reset: 0 }
  let upstream: MockUpstream
  let t: TestServer
  let presenter: TrayPresenter
  let view: TrayView | null = null
  beforeAll(async () => {
    upstream = await startMockUpstream(() => ({
      status: 200,
      headers: {
        'content-type': 'application/json',
        'anthropic-ratelimit-unified-5h-utilization': state.utilization,
        'anthropic-ratelimit-unified-5h-reset': String(state.reset / 1000),
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
  return {
    state,
    view: () => view,
    call: (key: string) =>
      postJson(`${t.url}/v1/messages`, { model: 'claude-sonnet-4-5', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }, {
        authorization: `Bearer ${key}`,
        'anthropic-version': '2023-06-01',
      }),
  }
}
