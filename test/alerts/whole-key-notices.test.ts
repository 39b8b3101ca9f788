import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { writeJsonFile } from '../../src/main/desktop-logic/json-file'
import { BudgetNotifier, NoticeLog, type Notice } from '../../src/main/desktop-logic/notices'
import { trayView } from '../../src/main/desktop-logic/tray-view'
import { NANO_COST, NANO_FIXTURE, callsOf, chat, replayJson } from '../budgets/support'
import { eventually } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'

/**
 * A budget rule on a whole key (README: Budgets, `api_key_pattern`) names that key. The webhooks and
 * the dashboard name such a rule by the key's hint; the desktop's own server told its tray and its
 * notifications the pattern itself: the raw key in the tray menu, in each notification's title and
 * in the notices file the app keeps in its data folder.
 */
const KEY = 'sk-whole-key-0123456789abcdef-9f3a'

let upstream: MockUpstream
let t: TestServer

beforeAll(async () => {
  upstream = await startMockUpstream()
  replayJson(upstream, NANO_FIXTURE)
  // Ten calls reach the limit: a soft-limit warning, the thresholds, then blocking.
  t = await startTestServer(
    { budgets: { rules: [{ api_key_pattern: KEY, daily_limit_usd: NANO_COST * 10 * (1 - 1e-9), action: 'block', soft_limit_pct: 0.7 }] } },
    upstream.url,
  )
})
afterAll(async () => {
  await t.cleanup()
  await upstream.close()
})

describe('budget alerts of a rule on a whole key, on the desktop', () => {
  it('never carry the raw key to the tray, the notifications or the notices file', async () => {
    const monitor = t.server.context.budgets!
    const shown: Notice[] = []
    const file = join(t.dir, 'notices.json')
    const notifier = new BudgetNotifier({ monitor, log: new NoticeLog(), timezone: 'UTC', show: (n) => shown.push(n), save: (log) => writeJsonFile(file, log) })
    notifier.start()
    try {
      for (let i = 0; i < 10; i++) {
        expect((await chat(t, KEY)).status).toBe(200)
        await eventually(() => callsOf(t, KEY).length === i + 1)
      }
      await eventually(() => shown.some((n) => n.level === 'blocking'))
    } finally {
      notifier.stop()
    }
    const alerts = monitor.alerts()
    expect(alerts.length).toBeGreaterThan(0)
    expect(alerts[0].api_key_pattern).toBe('sk-…9f3a')
    const tray = JSON.stringify(trayView({ todayUsd: 1, alerts, platform: 'linux' }))
    expect(tray).toContain('sk-…9f3a')
    expect(tray).not.toContain(KEY)
    expect(shown.length).toBeGreaterThan(1)
    for (const n of shown) expect(`${n.title} ${n.body}`).not.toContain(KEY)
    expect(readFileSync(file, 'utf8')).not.toContain(KEY)
  })
})
