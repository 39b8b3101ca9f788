import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { PlanAlert } from '../../src/main/plans/tracker'
import { postJson, request } from '../support/http'
import { type MockUpstream, type Reply, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'

// A Claude plan out of its allowance: Anthropic refuses the call with 429 and says so in the
// account-wide unified headers, as Claude Code reads them (claudeAiLimits: `-status: rejected`,
// `-reset` when calls are allowed again, `-representative-claim` naming the window that is used
// up, `five_hour`, `seven_day`, `seven_day_overage_included`, `seven_day_opus`…). The window the refusal names is full until
// that reset, whether or not the answer also carries that claim's utilization.

const RESET = Math.floor((Date.now() + 2 * 3600_000) / 1000)
let reply: () => Reply = () => ({ status: 200, body: '{}' })
let upstream: MockUpstream
let t: TestServer

const OK_BODY = JSON.stringify({
  id: 'msg_1', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5',
  content: [{ type: 'text', text: 'hi' }], stop_reason: 'end_turn', usage: { input_tokens: 10, output_tokens: 2 },
})
const REFUSAL_BODY = JSON.stringify({ type: 'error', error: { type: 'rate_limit_error', message: 'This request would exceed your account\'s rate limit. Please try again later.' } })

beforeAll(async () => {
  upstream = await startMockUpstream(() => reply())
  t = await startTestServer({}, upstream.url)
})
afterAll(async () => {
  await t.cleanup()
  await upstream.close()
})

/** A Claude Code Messages call with login `token`, naming its account (as its metadata does). */
function call(token: string) {
  const user_id = JSON.stringify({ device_id: 'd'.repeat(64), account_uuid: `0b6e3d3c-1111-4222-8333-${token.slice(-4).repeat(3)}`, session_id: '11111111-2222-4333-8444-555555555555' })
  return postJson(`${t.url}/v1/messages`, { model: 'claude-sonnet-4-5', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }], metadata: { user_id } }, {
    authorization: `Bearer ${token}`,
    'anthropic-version': '2023-06-01',
    'anthropic-beta': 'oauth-2025-04-20',
  })
}

async function windowsOf(hint: string): Promise<any[]> {
  const accounts = (await request(`${t.url}/api/dashboard/plans`)).json().accounts as any[]
  return accounts.find((a) => a.account_hint === hint)?.windows ?? []
}

/** The 429 Anthropic answers a Claude plan that has used up the window `claim` names. */
function refusal(claim: string, extra: Record<string, string> = {}): Reply {
  return {
    status: 429,
    headers: {
      'content-type': 'application/json',
      'retry-after': '7200',
      'anthropic-ratelimit-unified-status': 'rejected',
      'anthropic-ratelimit-unified-reset': String(RESET),
      'anthropic-ratelimit-unified-representative-claim': claim,
      'anthropic-ratelimit-unified-fallback': 'available',
      ...extra,
    },
    body: REFUSAL_BODY,
  }
}

describe('a Claude plan refused for its used-up window', () => {
  it('shows the window the refusal names full and rejected, until the reset it names, and notifies of 95%', async () => {
    const alerts: PlanAlert[] = []
    const off = t.server.context.plans!.onAlert((a) => alerts.push(a))
    try {
      reply = () => ({
        status: 200,
        headers: {
          'content-type': 'application/json',
          'anthropic-ratelimit-unified-status': 'allowed_warning',
          'anthropic-ratelimit-unified-representative-claim': 'five_hour',
          'anthropic-ratelimit-unified-5h-utilization': '0.9',
          'anthropic-ratelimit-unified-5h-reset': String(RESET),
          'anthropic-ratelimit-unified-5h-status': 'allowed_warning',
          'anthropic-ratelimit-unified-7d-utilization': '0.3',
          'anthropic-ratelimit-unified-7d-reset': String(RESET + 4 * 86_400),
          'anthropic-ratelimit-unified-7d-status': 'allowed',
        },
        body: OK_BODY,
      })
      expect((await call('sk-ant-oat01-refused-plan-token-aaaa')).status).toBe(200)
      expect((await windowsOf('sk-…aaaa')).map((w) => [w.name, w.utilization, w.status])).toEqual([['5h', 0.9, 'allowed_warning'], ['7d', 0.3, 'allowed']])
      // The next call is refused: the 5-hour window is used up.
      reply = () => refusal('five_hour')
      expect((await call('sk-ant-oat01-refused-plan-token-aaaa')).status).toBe(429)
      await expect.poll(async () => (await windowsOf('sk-…aaaa')).find((w) => w.name === '5h')?.utilization, { timeout: 10_000 }).toBe(1)
      const ws = await windowsOf('sk-…aaaa')
      expect(ws.find((w) => w.name === '5h')).toMatchObject({ utilization: 1, status: 'rejected', resets_at: new Date(RESET * 1000).toISOString() })
      // The other window is as it was.
      expect(ws.find((w) => w.name === '7d')).toMatchObject({ utilization: 0.3, status: 'allowed' })
      expect(alerts.map((a) => [a.window, a.threshold])).toEqual([['5h', 0.8], ['5h', 0.95]])
    } finally {
      off()
    }
  })

  it("a refusal naming seven_day_overage_included fills the 7d_oi window the headers report it under, and no other", async () => {
    // Claude Code 2.1.337 reads that claim's figures from `anthropic-ratelimit-unified-7d_oi-*`
    // (its table: five_hour 5h, seven_day 7d, seven_day_overage_included 7d_oi), the window the
    // dashboard shows; the refusal names it by its long name.
    const alerts: PlanAlert[] = []
    const off = t.server.context.plans!.onAlert((a) => alerts.push(a))
    try {
      reply = () => ({
        status: 200,
        headers: {
          'content-type': 'application/json',
          'anthropic-ratelimit-unified-status': 'allowed_warning',
          'anthropic-ratelimit-unified-representative-claim': 'seven_day_overage_included',
          'anthropic-ratelimit-unified-5h-utilization': '0.1',
          'anthropic-ratelimit-unified-5h-reset': String(RESET),
          'anthropic-ratelimit-unified-7d-utilization': '0.4',
          'anthropic-ratelimit-unified-7d-reset': String(RESET + 4 * 86_400),
          'anthropic-ratelimit-unified-7d_oi-utilization': '0.9',
          'anthropic-ratelimit-unified-7d_oi-reset': String(RESET + 4 * 86_400),
          'anthropic-ratelimit-unified-7d_oi-status': 'allowed_warning',
        },
        body: OK_BODY,
      })
      expect((await call('sk-ant-oat01-refused-plan-token-dddd')).status).toBe(200)
      expect((await windowsOf('sk-…dddd')).map((w) => w.name)).toEqual(['5h', '7d', '7d_oi'])
      reply = () => refusal('seven_day_overage_included', { 'anthropic-ratelimit-unified-reset': String(RESET + 4 * 86_400) })
      expect((await call('sk-ant-oat01-refused-plan-token-dddd')).status).toBe(429)
      await expect.poll(async () => (await windowsOf('sk-…dddd')).find((w) => w.name === '7d_oi')?.utilization, { timeout: 10_000 }).toBe(1)
      const ws = await windowsOf('sk-…dddd')
      expect(ws.map((w) => w.name)).toEqual(['5h', '7d', '7d_oi'])
      expect(ws.find((w) => w.name === '7d_oi')).toMatchObject({ utilization: 1, status: 'rejected', resets_at: new Date((RESET + 4 * 86_400) * 1000).toISOString() })
      // One window: each threshold told once.
      expect(alerts.map((a) => [a.window, a.threshold])).toEqual([['7d_oi', 0.8], ['7d_oi', 0.95]])
    } finally {
      off()
    }
  })

  it('a refusal that is the first answer read (after a restart) shows that window full with its reset, not nothing', async () => {
    reply = () => refusal('seven_day_opus')
    expect((await call('sk-ant-oat01-refused-plan-token-bbbb')).status).toBe(429)
    await expect.poll(async () => (await windowsOf('sk-…bbbb')).length, { timeout: 10_000 }).toBe(1)
    expect((await windowsOf('sk-…bbbb'))[0]).toMatchObject({ name: '7d_opus', utilization: 1, status: 'rejected', resets_at: new Date(RESET * 1000).toISOString() })
  })

  it("a refusal that carries the claim's own figures is read as it says", async () => {
    reply = () => refusal('five_hour', { 'anthropic-ratelimit-unified-5h-utilization': '0.99', 'anthropic-ratelimit-unified-5h-reset': String(RESET), 'anthropic-ratelimit-unified-5h-status': 'rejected' })
    expect((await call('sk-ant-oat01-refused-plan-token-cccc')).status).toBe(429)
    await expect.poll(async () => (await windowsOf('sk-…cccc')).length, { timeout: 10_000 }).toBe(1)
    expect((await windowsOf('sk-…cccc'))[0]).toMatchObject({ name: '5h', utilization: 0.99, status: 'rejected' })
  })
})
