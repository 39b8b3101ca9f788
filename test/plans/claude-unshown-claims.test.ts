import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { planShort } from '../../src/main/desktop-logic/tray-plans'
import type { PlanAlert } from '../../src/main/plans/tracker'
import { fixture } from '../support/fixtures'
import { postJson, request } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'

// Anthropic sends a Claude login more `anthropic-ratelimit-unified-*-utilization` headers than the
// plan's windows. Claude Code 2.1.337 reads a window's figures only for 5h, 7d, 7d_oi and overage
// (its table of claims: five_hour, seven_day, seven_day_overage_included, overage), and names
// seven_day_opus and seven_day_sonnet when one refuses; the others it reads are no window of the
// plan: grace-5h and grace-7d (how far into a grace zone past the limit a call went),
// slow-budget (the weekly allowance of lower-priority calls), overage-period-monthly and
// overage-period-channel (the share of a spend limit for usage credits). Those are kept in the
// account's details, never drawn as windows, in the tray or notified at 80% and 95%.

const soon = (ms: number) => String(Math.floor((Date.now() + ms) / 1000))
let fivehour = '0.2'
let upstream: MockUpstream
let t: TestServer

beforeAll(async () => {
  upstream = await startMockUpstream(() => ({
    status: 200,
    headers: {
      'content-type': 'application/json',
      'anthropic-ratelimit-unified-status': 'allowed',
      'anthropic-ratelimit-unified-representative-claim': 'five_hour',
      'anthropic-ratelimit-unified-5h-utilization': fivehour,
      'anthropic-ratelimit-unified-5h-reset': soon(3 * 3600_000),
      'anthropic-ratelimit-unified-5h-status': 'allowed',
      'anthropic-ratelimit-unified-7d-utilization': '0.3',
      'anthropic-ratelimit-unified-7d-reset': soon(4 * 86_400_000),
      'anthropic-ratelimit-unified-grace-5h-utilization': '0.97',
      'anthropic-ratelimit-unified-grace-7d-utilization': '0.9',
      'anthropic-ratelimit-unified-grace-status': 'active',
      'anthropic-ratelimit-unified-slow-budget-utilization': '0.96',
      'anthropic-ratelimit-unified-slow-budget-reset': soon(2 * 86_400_000),
      'anthropic-ratelimit-unified-overage-period-monthly-utilization': '0.85',
      'anthropic-ratelimit-unified-overage-period-channel-utilization': '0.99',
    },
    body: fixture('anthropic/messages-nonstream-basic.json'),
  }))
  t = await startTestServer({ metrics: { enabled: true } }, upstream.url)
})
afterAll(async () => {
  await t.cleanup()
  await upstream.close()
})

/** A Claude Code call, naming its account as its metadata does (so what crosses is told at once). */
function call() {
  const user_id = JSON.stringify({ device_id: 'd'.repeat(64), account_uuid: '0b6e3d3c-1111-4222-8333-aaaaaaaaaaaa', session_id: '11111111-2222-4333-8444-555555555555' })
  return postJson(`${t.url}/v1/messages`, { model: 'claude-sonnet-4-5', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }], metadata: { user_id } }, {
    authorization: 'Bearer sk-ant-oat01-unshown-claims-token-aaaa',
    'anthropic-version': '2023-06-01',
    'anthropic-beta': 'oauth-2025-04-20',
  })
}

async function account(): Promise<any> {
  const accounts = (await request(`${t.url}/api/dashboard/plans`)).json().accounts as any[]
  return accounts.find((a) => a.account_hint === 'sk-…aaaa')
}

describe("a Claude plan's unified headers that are no window Claude Code shows", () => {
  it('are kept in details, not drawn as windows, shown in the tray or notified of', async () => {
    const alerts: PlanAlert[] = []
    const off = t.server.context.plans!.onAlert((a) => alerts.push(a))
    try {
      expect((await call()).status).toBe(200)
      await expect.poll(async () => (await account())?.windows.find((w: any) => w.name === '5h')?.utilization, { timeout: 10_000 }).toBe(0.2)
      const a = await account()
      expect(a.windows.map((w: any) => [w.name, w.utilization])).toEqual([['5h', 0.2], ['7d', 0.3]])
      expect(a.details).toMatchObject({
        'grace-5h-utilization': '0.97',
        'grace-7d-utilization': '0.9',
        'grace-status': 'active',
        'slow-budget-utilization': '0.96',
        'overage-period-monthly-utilization': '0.85',
        'overage-period-channel-utilization': '0.99',
      })
      expect(Date.parse(a.details['slow-budget-reset'])).toBeGreaterThan(Date.now())
      // The tray's fullest window is the plan's (not grace-5h at 97%).
      expect(planShort([a], Date.now())).toBe('7d 30%')
      const metrics = (await request(`${t.url}/metrics`)).text
      expect(metrics.split('\n').filter((l) => l.startsWith('burnrate_plan_utilization_ratio{')).map((l) => /window="([^"]+)"/.exec(l)![1]).sort()).toEqual(['5h', '7d'])

      // The 5-hour window crossing 80% is told: of it alone.
      fivehour = '0.82'
      expect((await call()).status).toBe(200)
      await expect.poll(async () => (await account())?.windows.find((w: any) => w.name === '5h')?.utilization, { timeout: 10_000 }).toBe(0.82)
      expect(alerts.map((x) => [x.window, x.threshold])).toEqual([['5h', 0.8]])
    } finally {
      off()
    }
  })
})
