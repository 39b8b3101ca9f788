import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import WebSocket from 'ws'
import type { PlanAlert } from '../../src/main/plans/tracker'
import { eventually, request } from '../support/http'
import { type TestServer, startTestServer } from '../support/server'
import { type WsUpstream, startWsUpstream } from '../support/ws-upstream'

/**
 * Codex logged in with ChatGPT upgrades `GET /chatgpt/codex/responses` to a WebSocket: the
 * upstream's x-codex upgrade headers and its `codex.rate_limits` events move the plan windows,
 * and the response on the socket is recorded as a subscription call.
 */

let up: WsUpstream
let t: TestServer
let upgradePath = ''
const reset = Math.floor(Date.now() / 1000) + 3 * 3600
/** The 5-hour window the upgrade answer reports: used percent and reset (epoch seconds). */
let upgradeUsed = 20
let upgradeReset = reset
/** The 5-hour window the codex.rate_limits event reports. */
let eventUsed = 35
let eventReset = reset
/** Refuse every response.create as the ChatGPT backend does a plan out of its allowance. */
let limitReached = false
/** Whether the upgrade answer carries the x-codex headers. */
let upgradeMeter = true
/** The refusal frame's name for its status: `status`, or `status_code` (which codex-rs takes as its alias). */
let statusKey = 'status'

beforeAll(async () => {
  up = await startWsUpstream({
    headers: () => (!upgradeMeter ? [] : [`x-codex-primary-used-percent: ${upgradeUsed}`, 'x-codex-primary-window-minutes: 300', `x-codex-primary-reset-at: ${upgradeReset}`]),
    onConnection: (ws, req) => {
      upgradePath = req.url ?? ''
      ws.on('message', (data) => {
        if (JSON.parse(String(data)).type !== 'response.create') return
        if (limitReached) {
          // The refusal as codex-rs's responses_websocket.rs reads it: an error frame carrying the
          // answer's status and the x-codex headers (window-minutes a JSON number, no reset-at).
          ws.send(JSON.stringify({
            type: 'error',
            [statusKey]: 429,
            error: { type: 'usage_limit_reached', message: 'The usage limit has been reached', plan_type: 'plus', resets_at: reset },
            headers: { 'x-codex-primary-used-percent': '100.0', 'x-codex-primary-window-minutes': 300 },
          }))
          return
        }
        const resp = { id: 'resp_1', object: 'response', model: 'gpt-4o-mini-2024-07-18' }
        ws.send(JSON.stringify({ type: 'codex.rate_limits', plan_type: 'plus', rate_limits: { primary: { used_percent: eventUsed, window_minutes: 300, reset_at: eventReset }, secondary: { used_percent: 9, window_minutes: 10080, reset_at: reset + 86400 } } }))
        ws.send(JSON.stringify({ type: 'response.created', response: resp }))
        ws.send(JSON.stringify({ type: 'response.completed', response: { ...resp, usage: { input_tokens: 1000, output_tokens: 50, total_tokens: 1050 } } }))
      })
    },
  })
  t = await startTestServer({}, up.url)
})
afterAll(async () => {
  await t.cleanup()
  await up.close()
})

/** Codex's ChatGPT login opens a Responses WebSocket on `path` and makes one call; the upstream's path it reached. */
async function oneCall(path: string, token: string, account = 'acct_ws', answerFrames = 3, beforeSend?: () => Promise<unknown>): Promise<string> {
  upgradePath = ''
  const ws = new WebSocket(`${t.url.replace('http', 'ws')}${path}`, {
    headers: { authorization: `Bearer ${token}`, 'chatgpt-account-id': account, originator: 'codex_exec' },
  })
  const frames: string[] = []
  ws.on('message', (d) => frames.push(String(d)))
  await new Promise((r, j) => {
    ws.on('open', r)
    ws.on('error', j)
  })
  await beforeSend?.()
  ws.send(JSON.stringify({ type: 'response.create', model: 'gpt-4o-mini', input: 'hi', stream: true }))
  await eventually(() => frames.length === answerFrames, 10_000)
  ws.close()
  return upgradePath
}

describe('Codex with ChatGPT over WebSocket', () => {
  it('reads the windows from the upgrade headers and codex.rate_limits, and records a subscription call', async () => {
    expect(await oneCall('/chatgpt/codex/responses', 'eyJ.chatgpt.ws-token-eeee')).toBe('/backend-api/codex/responses')
    const accounts = (await request(`${t.url}/api/dashboard/plans`)).json().accounts
    expect(accounts).toHaveLength(1)
    expect(accounts[0]).toMatchObject({ provider: 'chatgpt', billing: 'subscription', details: { 'codex-plan-type': 'plus' } })
    // The event came after the upgrade headers (20%): the latest reading wins.
    expect(accounts[0].windows.map((w: any) => [w.name, w.utilization])).toEqual([['5h', 0.35], ['7d', 0.09]])
    await t.server.ledger.flush()
    const row = t.server.db.prepare('SELECT provider, billing, input_tokens, priced FROM calls').get()
    expect(row).toEqual({ provider: 'chatgpt', billing: 'subscription', input_tokens: 1000, priced: 1 })
    const summary = (await request(`${t.url}/api/dashboard/summary`)).json()
    expect(summary.today_spend_usd).toBe(0)
    expect(summary.today_plan_value_usd).toBeGreaterThan(0)
  })

  it('on /v1/responses (the openai_base_url an API key uses), a ChatGPT login is upgraded at the ChatGPT backend too', async () => {
    expect(await oneCall('/v1/responses', 'eyJ.chatgpt.ws-token-ffff')).toBe('/backend-api/codex/responses')
    await eventually(() => {
      t.server.ledger.flush()
      return (t.server.db.prepare('SELECT COUNT(*) AS n FROM calls').get() as { n: number }).n === 2
    }, 10_000)
    const row = t.server.db.prepare('SELECT provider, billing, input_tokens FROM calls ORDER BY id DESC LIMIT 1').get()
    expect(row).toEqual({ provider: 'chatgpt', billing: 'subscription', input_tokens: 1000 })
  })

  it("a plan refused on the socket for its used-up allowance shows its window full, keeps the window's reset, and notifies once", async () => {
    const alerts: PlanAlert[] = []
    const off = t.server.context.plans!.onAlert((a) => alerts.push(a))
    const window = async () =>
      (await request(`${t.url}/api/dashboard/plans`)).json().accounts.find((a: any) => a.account_hint === 'eyJ…gggg')?.windows[0]
    try {
      upgradeUsed = 20
      await oneCall('/chatgpt/codex/responses', 'eyJ.chatgpt.ws-token-gggg', 'acct_ws_limit')
      expect(await window()).toMatchObject({ name: '5h', utilization: 0.35 })
      // The next call is refused: the error frame's headers say the window is used up.
      limitReached = true
      await oneCall('/chatgpt/codex/responses', 'eyJ.chatgpt.ws-token-gggg', 'acct_ws_limit', 1)
      await eventually(async () => (await window())?.utilization === 1, 10_000)
      expect(await window()).toMatchObject({ name: '5h', utilization: 1, status: 'rejected', resets_at: new Date(reset * 1000).toISOString() })
      // Codex opens a new socket and is refused again, its upgrade answer saying the same window with its reset.
      upgradeUsed = 100
      await oneCall('/chatgpt/codex/responses', 'eyJ.chatgpt.ws-token-gggg', 'acct_ws_limit', 1)
      expect(await window()).toMatchObject({ utilization: 1, resets_at: new Date(reset * 1000).toISOString() })
      // One window period: each threshold told once.
      expect(alerts.map((a) => [a.window, a.threshold])).toEqual([['5h', 0.8], ['5h', 0.95]])
    } finally {
      off()
      limitReached = false
      upgradeUsed = 20
    }
  })

  it("a refusal on a socket whose window was never read before takes its reset from the refusal's own resets_at", async () => {
    // No reading of the window yet (a socket whose upgrade answer carried no meter, or the first
    // call after a restart): the error frame's headers give the used percent, its body the reset.
    upgradeMeter = false
    limitReached = true
    try {
      await oneCall('/chatgpt/codex/responses', 'eyJ.chatgpt.ws-token-kkkk', 'acct_ws_fresh_refusal', 1)
      const window = async () =>
        (await request(`${t.url}/api/dashboard/plans`)).json().accounts.find((a: any) => a.account_hint === 'eyJ…kkkk')?.windows[0]
      await eventually(async () => (await window())?.utilization === 1, 10_000)
      expect(await window()).toMatchObject({ name: '5h', utilization: 1, status: 'rejected', resets_at: new Date(reset * 1000).toISOString() })
    } finally {
      upgradeMeter = true
      limitReached = false
    }
  })

  it('a refusal frame naming its status status_code (as codex-rs reads it too) is recorded as the 429 it is, its window full', async () => {
    limitReached = true
    statusKey = 'status_code'
    try {
      await oneCall('/chatgpt/codex/responses', 'eyJ.chatgpt.ws-token-mmmm', 'acct_ws_status_code', 1)
      const window = async () =>
        (await request(`${t.url}/api/dashboard/plans`)).json().accounts.find((a: any) => a.account_hint === 'eyJ…mmmm')?.windows[0]
      await eventually(async () => (await window())?.utilization === 1, 10_000)
      await t.server.ledger.flush()
      const row = t.server.db.prepare('SELECT status, error FROM calls ORDER BY id DESC LIMIT 1').get()
      expect(row).toMatchObject({ status: 429 })
    } finally {
      limitReached = false
      statusKey = 'status'
    }
  })

  it('a socket opened before its window reset, whose first call comes after it, tells of no crossing in the period that has ended', async () => {
    const alerts: PlanAlert[] = []
    const off = t.server.context.plans!.onAlert((a) => alerts.push(a))
    // Codex opens its socket ahead of the first prompt: the upgrade answer says 90%, the window
    // resetting in a couple of seconds; the prompt comes after the reset.
    upgradeUsed = 90
    upgradeReset = Math.ceil(Date.now() / 1000) + 2
    eventUsed = 4
    eventReset = upgradeReset + 5 * 3600
    try {
      await oneCall('/chatgpt/codex/responses', 'eyJ.chatgpt.ws-token-hhhh', 'acct_ws_prewarmed', 3, () => eventually(() => Date.now() > upgradeReset * 1000 + 100, 10_000))
      const acct = (await request(`${t.url}/api/dashboard/plans`)).json().accounts.find((a: any) => a.account_hint === 'eyJ…hhhh')
      expect(acct.windows[0]).toMatchObject({ name: '5h', utilization: 0.04, resets_at: new Date(eventReset * 1000).toISOString() })
      expect(alerts).toEqual([])
    } finally {
      off()
      upgradeUsed = 20
      upgradeReset = reset
      eventUsed = 35
      eventReset = reset
    }
  })
})
