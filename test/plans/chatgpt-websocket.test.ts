import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import WebSocket from 'ws'
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

beforeAll(async () => {
  up = await startWsUpstream({
    headers: () => ['x-codex-primary-used-percent: 20', 'x-codex-primary-window-minutes: 300', `x-codex-primary-reset-at: ${reset}`],
    onConnection: (ws, req) => {
      upgradePath = req.url ?? ''
      ws.on('message', (data) => {
        if (JSON.parse(String(data)).type !== 'response.create') return
        const resp = { id: 'resp_1', object: 'response', model: 'gpt-4o-mini-2024-07-18' }
        ws.send(JSON.stringify({ type: 'codex.rate_limits', plan_type: 'plus', rate_limits: { primary: { used_percent: 35, window_minutes: 300, reset_at: reset }, secondary: { used_percent: 9, window_minutes: 10080, reset_at: reset + 86400 } } }))
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
async function oneCall(path: string, token: string): Promise<string> {
  upgradePath = ''
  const ws = new WebSocket(`${t.url.replace('http', 'ws')}${path}`, {
    headers: { authorization: `Bearer ${token}`, 'chatgpt-account-id': 'acct_ws', originator: 'codex_exec' },
  })
  const frames: string[] = []
  ws.on('message', (d) => frames.push(String(d)))
  await new Promise((r, j) => {
    ws.on('open', r)
    ws.on('error', j)
  })
  ws.send(JSON.stringify({ type: 'response.create', model: 'gpt-4o-mini', input: 'hi', stream: true }))
  await eventually(() => frames.length === 3, 10_000)
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
})
