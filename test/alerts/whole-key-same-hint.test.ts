import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { BudgetNotifier, NoticeLog, type Notice } from '../../src/main/desktop-logic/notices'
import { trayView } from '../../src/main/desktop-logic/tray-view'
import { NANO_COST, NANO_FIXTURE, callsOf, chat, replayJson } from '../budgets/support'
import { eventually } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'

/**
 * Rules on whole keys are named by the key's hint on the desktop (./whole-key-notices.test.ts).
 * A hint is the key's first three and last four characters: two keys can share it. Each rule is
 * still a budget of its own: each one blocking gets its notification and its line in the tray.
 */
const A = 'sk-whole-key-0123456789abcdef-9f3a'
const B = 'sk-other-key-fedcba9876543210-9f3a'

let upstream: MockUpstream
let t: TestServer

beforeAll(async () => {
  upstream = await startMockUpstream()
  replayJson(upstream, NANO_FIXTURE)
  const rule = (k: string) => ({ api_key_pattern: k, daily_limit_usd: NANO_COST * 2 * (1 - 1e-9), action: 'block' })
  t = await startTestServer({ budgets: { rules: [rule(A), rule(B)] } }, upstream.url)
})
afterAll(async () => {
  await t.cleanup()
  await upstream.close()
})

describe('two rules on whole keys with the same hint, on the desktop', () => {
  it('each reaching its limit is notified, and shown in the tray', async () => {
    const monitor = t.server.context.budgets!
    const shown: Notice[] = []
    const notifier = new BudgetNotifier({ monitor, log: new NoticeLog(), timezone: 'UTC', show: (n) => shown.push(n), save: () => {} })
    notifier.start()
    try {
      for (const key of [A, B]) {
        for (let i = 0; i < 2; i++) {
          expect((await chat(t, key)).status).toBe(200)
          await eventually(() => callsOf(t, key).length === i + 1)
        }
        await eventually(() => monitor.alerts().filter((a) => a.level === 'blocking').length === (key === A ? 1 : 2))
      }
    } finally {
      notifier.stop()
    }
    expect(shown.filter((n) => n.level === 'blocking')).toHaveLength(2)
    const tray = JSON.stringify(trayView({ todayUsd: 1, alerts: monitor.alerts(), platform: 'linux' }))
    expect(tray).toContain('2 budgets blocking')
  })
})
