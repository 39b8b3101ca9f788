import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { PlanAlert } from '../../src/main/plans/tracker'
import { eventually, postJson, request } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'

/**
 * The ChatGPT backend refusing a Codex call over HTTP for a plan out of its allowance: 429 with the
 * x-codex headers (the full window's used percent, no reset-at) and the body codex-rs reads
 * (`{error: {type: 'usage_limit_reached', plan_type, resets_at}}`, older servers `resets_in_seconds`).
 */
let answer: { headers: Record<string, string>; body: unknown } = { headers: {}, body: {} }

describe('a Codex HTTP 429 for a used-up plan', () => {
  let upstream: MockUpstream
  let t: TestServer

  beforeAll(async () => {
    upstream = await startMockUpstream(() => ({ status: 429, headers: { 'content-type': 'application/json', ...answer.headers }, body: JSON.stringify(answer.body) }))
    t = await startTestServer({}, upstream.url)
  })
  afterAll(async () => {
    await t.cleanup()
    await upstream.close()
  })

  const call = (token: string, account: string) =>
    postJson(`${t.url}/chatgpt/codex/responses`, { model: 'gpt-4o', stream: true, input: 'hi' }, { authorization: `Bearer ${token}`, 'chatgpt-account-id': account })
  const windows = async (hint: string) =>
    ((await request(`${t.url}/api/dashboard/plans`)).json().accounts as any[]).find((a) => a.account_hint === hint)?.windows ?? []

  it("takes the full window's reset from the body's resets_at, and notifies once", async () => {
    const alerts: PlanAlert[] = []
    const off = t.server.context.plans!.onAlert((a) => alerts.push(a))
    const reset = Math.floor(Date.now() / 1000) + 2 * 3600
    const weekly = reset + 3 * 86400
    answer = {
      headers: {
        'x-codex-primary-used-percent': '100',
        'x-codex-primary-window-minutes': '300',
        'x-codex-secondary-used-percent': '40',
        'x-codex-secondary-window-minutes': '10080',
        'x-codex-secondary-reset-at': String(weekly),
      },
      body: { error: { type: 'usage_limit_reached', message: 'The usage limit has been reached', plan_type: 'plus', resets_at: reset } },
    }
    try {
      const r = await call('eyJhbGciOiJSUzI1NiJ9.http-refusal.aaaa', 'acct_http_refusal')
      expect(r.status).toBe(429)
      await eventually(async () => (await windows('eyJ…aaaa')).length === 2 && (await windows('eyJ…aaaa'))[0].resets_at !== null, 10_000)
      expect((await windows('eyJ…aaaa')).map((w: any) => [w.name, w.utilization, w.status, w.resets_at])).toEqual([
        ['5h', 1, 'rejected', new Date(reset * 1000).toISOString()],
        ['7d', 0.4, '', new Date(weekly * 1000).toISOString()],
      ])
      // One window period: each threshold told once (not once without a reset and again with it).
      expect(alerts.map((a) => [a.window, a.threshold, a.resets_at])).toEqual([
        ['5h', 0.8, new Date(reset * 1000).toISOString()],
        ['5h', 0.95, new Date(reset * 1000).toISOString()],
      ])
      // The refused call is recorded as before: its 429, no tokens, nothing spent.
      await t.server.ledger.flush()
      const row = t.server.db.prepare('SELECT provider, status, billing, input_tokens, output_tokens, cost_usd FROM calls ORDER BY id DESC LIMIT 1').get()
      expect(row).toEqual({ provider: 'chatgpt', status: 429, billing: 'subscription', input_tokens: 0, output_tokens: 0, cost_usd: 0 })
    } finally {
      off()
    }
  })

  it('an older server saying resets_in_seconds: the window resets then, and shows a fresh period after it', async () => {
    answer = {
      headers: { 'x-codex-primary-used-percent': '100', 'x-codex-primary-window-minutes': '300' },
      body: { error: { type: 'usage_limit_reached', message: 'The usage limit has been reached', resets_in_seconds: 2 } },
    }
    const before = Date.now()
    expect((await call('eyJhbGciOiJSUzI1NiJ9.http-refusal.bbbb', 'acct_http_refusal_old')).status).toBe(429)
    await eventually(async () => (await windows('eyJ…bbbb'))[0]?.resets_at != null, 10_000)
    const at = Date.parse((await windows('eyJ…bbbb'))[0].resets_at)
    expect(at).toBeGreaterThanOrEqual(before + 2000 - 1000)
    expect(at).toBeLessThanOrEqual(Date.now() + 2000 + 1000)
    // After the reset, with no call since: 0%, not still 100%.
    await eventually(async () => (await windows('eyJ…bbbb'))[0]?.utilization === 0, 10_000)
  })

  it('a 429 whose body names no reset (a per-minute limit) still shows the window the headers give', async () => {
    answer = { headers: { 'x-codex-primary-used-percent': '55', 'x-codex-primary-window-minutes': '300', 'x-codex-primary-reset-at': String(Math.floor(Date.now() / 1000) + 3600) }, body: { error: { type: 'rate_limit_exceeded', message: 'slow down' } } }
    expect((await call('eyJhbGciOiJSUzI1NiJ9.http-refusal.cccc', 'acct_http_rate')).status).toBe(429)
    await eventually(async () => (await windows('eyJ…cccc')).length === 1, 10_000)
    expect((await windows('eyJ…cccc'))[0]).toMatchObject({ name: '5h', utilization: 0.55 })
  })
})
