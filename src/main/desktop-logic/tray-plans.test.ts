import { describe, expect, it } from 'vitest'
import type { PlanAccount } from '../../shared/api'
import type { PlanAlert } from '../plans/tracker'
import { PlanNoticeLog, httpPlans, planLine, planNotice, planShort } from './tray-plans'
import { trayView } from './tray-view'

const NOW = Date.parse('2026-11-23T10:00:00Z')
const at = (h: number) => new Date(NOW + h * 3600_000).toISOString()

const account = (over: Partial<PlanAccount> = {}): PlanAccount => ({
  provider: 'anthropic',
  account_hint: 'sk-…abcd',
  account_id: '0123456789abcdef',
  billing: 'subscription',
  updated_at: at(0),
  windows: [
    { name: '5h', utilization: 0.43, resets_at: at(4.33), status: 'allowed', projected_exhausted_at: at(3.08), projected_at_reset: 1, window_minutes: 300 },
    { name: '7d', utilization: 0.12, resets_at: at(100), status: '', projected_exhausted_at: null, projected_at_reset: 0.3, window_minutes: 10080 },
  ],
  details: {},
  ...over,
})

describe('plan windows in the tray', () => {
  it('shows the fullest window with its reset and pace', () => {
    expect(planShort([account()], NOW)).toBe('5h 43%')
    expect(planLine([account()], NOW, 'UTC')).toBe('5h 43% · resets 14:19 · out at 13:04')
    const v = trayView({ todayUsd: 1.2, alerts: [], platform: 'darwin', plans: [account()], now: NOW, timeZone: 'UTC' })
    expect(v.title).toBe('$1.20 · 5h 43%')
    expect(v.tooltip).toBe('Burnrate: $1.20 today\n5h 43% · resets 14:19 · out at 13:04')
  })

  it('says where the window ends when the pace does not run it out, and ignores windows that reset', () => {
    const a = account({ windows: [{ ...account().windows[0], projected_exhausted_at: null, projected_at_reset: 0.6 }, { ...account().windows[1], utilization: 0.9, resets_at: at(-1) }] })
    expect(planLine([a], NOW, 'UTC')).toBe('5h 43% · resets 14:19 · on pace for 60%')
  })

  it('never reads 100% for a window short of its limit, as the dashboard says it', () => {
    // Claude's 5h window at 99.6%: calls still go through; the dashboard's bar reads 99.6%.
    const w = { ...account().windows[0], utilization: 0.996, projected_exhausted_at: null, projected_at_reset: 0.998 }
    const a = account({ windows: [w] })
    expect(planShort([a], NOW)).toBe('5h 99.6%')
    expect(planLine([a], NOW, 'UTC')).toBe('5h 99.6% · resets 14:19 · on pace for 99.8%')
    const alert: PlanAlert = { provider: 'anthropic', account_hint: 'sk-…abcd', window: '5h', threshold: 0.95, utilization: 0.996, resets_at: at(2), id: 'z' }
    expect(planNotice(alert, 'UTC').title).toBe('Claude plan: 5h window at 99.6%')
    // A small share keeps its decimal, as on the dashboard (not 0%).
    expect(planShort([account({ windows: [{ ...w, utilization: 0.004 }] })], NOW)).toBe('5h 0.4%')
    expect(planShort([account({ windows: [{ ...w, utilization: 1 }] })], NOW)).toBe('5h 100%')
  })

  it('names the day of a reset or run-out that is not today', () => {
    // The 7d window is the fullest; it resets in 100 hours (Friday), not at 14:00 today.
    const a = account({ windows: [{ ...account().windows[0], utilization: 0.2 }, { ...account().windows[1], utilization: 0.7, projected_exhausted_at: at(50), projected_at_reset: 1.3 }] })
    expect(planLine([a], NOW, 'UTC')).toBe('7d 70% · resets Fri 14:00 · out at Wed 12:00')
    // Past a week, the date.
    const far = account({ windows: [{ ...account().windows[1], utilization: 0.7, resets_at: at(12 * 24 + 4), projected_exhausted_at: null, projected_at_reset: null }] })
    expect(planLine([far], NOW, 'UTC')).toBe('7d 70% · resets 5 Dec 14:00')
    // Today in the zone shown: the time alone (10:00 UTC is 19:00 in Tokyo; 4.33 h on is 23:19 there).
    expect(planLine([account()], NOW, 'Asia/Tokyo')).toBe('5h 43% · resets 23:19 · out at 22:04')
    const alert: PlanAlert = { provider: 'anthropic', account_hint: 'sk-…abcd', window: '7d', threshold: 0.8, utilization: 0.81, resets_at: at(100), id: 'w' }
    expect(planNotice(alert, 'UTC', NOW).body).toBe('The 7d window of sk-…abcd has used 81% of its allowance. It resets Fri 14:00.')
    expect(planNotice({ ...alert, resets_at: at(2) }, 'UTC', NOW).body).toBe('The 7d window of sk-…abcd has used 81% of its allowance. It resets at 12:00.')
  })

  it('prefers plans over API-key limits, and shows nothing without windows', () => {
    const key = account({ provider: 'openai', billing: 'api', windows: [{ ...account().windows[0], name: 'requests', utilization: 0.99 }] })
    expect(planShort([key, account()], NOW)).toBe('5h 43%')
    expect(planShort([], NOW)).toBeNull()
    expect(trayView({ todayUsd: 1, alerts: [], platform: 'linux', plans: [] }).planLine).toBeNull()
  })

  it('notifies once per window period and threshold, across restarts', () => {
    const alert: PlanAlert = { provider: 'anthropic', account_hint: 'sk-…abcd', window: '5h', threshold: 0.8, utilization: 0.81, resets_at: at(2), id: 'x' }
    const log = new PlanNoticeLog()
    expect(log.claim(alert, NOW)).toBe(true)
    expect(log.claim(alert, NOW)).toBe(false)
    const again = PlanNoticeLog.fromJSON(JSON.parse(JSON.stringify(log)))
    expect(again.claim(alert, NOW + 3600_000)).toBe(false)
    expect(again.claim(alert, NOW + 3 * 3600_000)).toBe(true) // the window reset
    expect(planNotice(alert, 'UTC')).toMatchObject({ level: 'warning', title: 'Claude plan: 5h window at 81%' })
    const gemini: PlanAlert = { provider: 'code-assist', account_hint: 'bur…ject', window: 'gemini-2.5-pro', threshold: 0.95, utilization: 0.96, resets_at: at(8), id: 'y' }
    expect(planNotice(gemini, 'UTC')).toMatchObject({ level: 'blocking', title: 'Gemini Code Assist plan: gemini-2.5-pro window at 96%' })
  })
})

describe('httpPlans (attached to another Burnrate)', () => {
  it('reads the plans endpoint and tells when they change', async () => {
    const bodies = [{ accounts: [account()] }, { accounts: [account()] }, { accounts: [] }]
    let n = 0
    const fetchFn = (async () => new Response(JSON.stringify(bodies[Math.min(n++, bodies.length - 1)]))) as typeof fetch
    const src = httpPlans('http://127.0.0.1:1', { fetch: fetchFn, pollMs: 1 })
    let changes = 0
    src.subscribe(() => changes++)
    await expect.poll(() => n >= 3).toBe(true)
    await expect.poll(() => src.list().length).toBe(0)
    src.stop()
    expect(changes).toBe(2) // the first read, then the empty one; the same answer twice is no change
  })
})
