import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import WebSocket from 'ws'
import { eventually, request } from '../support/http'
import { type TestServer, startTestServer } from '../support/server'
import { type WsUpstream, startWsUpstream } from '../support/ws-upstream'

// Codex opens its Responses socket ahead of the first prompt. The upgrade answer's x-codex headers
// say where the plan's windows stood then; they are read with the socket's first call (which names
// the account), and the codex.rate_limits event of that call says where they stand now. The pace
// is the line through readings at the times they were true: the upgrade answer's at the upgrade,
// not a reading seconds old stamped with the call's time, which made 20% -> 35% a rise of 15%
// within milliseconds ("runs out now").

const RESET = Math.floor(Date.now() / 1000) + 3 * 3600
let upgradeUsed = 20
let eventUsed = 35
let up: WsUpstream
let t: TestServer

beforeAll(async () => {
  up = await startWsUpstream({
    headers: () => [`x-codex-primary-used-percent: ${upgradeUsed}`, 'x-codex-primary-window-minutes: 300', `x-codex-primary-reset-at: ${RESET}`],
    onConnection: (ws) => {
      ws.on('message', (data) => {
        if (JSON.parse(String(data)).type !== 'response.create') return
        const resp = { id: 'resp_1', object: 'response', model: 'gpt-4o-mini-2024-07-18' }
        ws.send(JSON.stringify({ type: 'codex.rate_limits', plan_type: 'plus', rate_limits: { primary: { used_percent: eventUsed, window_minutes: 300, reset_at: RESET } } }))
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

/** A Codex socket opened `waitMs` before its one call; resolves once the call's answer is in. */
async function socketCall(token: string, waitMs: number): Promise<void> {
  const ws = new WebSocket(`${t.url.replace('http', 'ws')}/chatgpt/codex/responses`, {
    headers: { authorization: `Bearer ${token}`, 'chatgpt-account-id': 'acct_pace', originator: 'codex_exec' },
  })
  const frames: string[] = []
  ws.on('message', (d) => frames.push(String(d)))
  await new Promise((r, j) => {
    ws.on('open', r)
    ws.on('error', j)
  })
  await new Promise((r) => setTimeout(r, waitMs))
  ws.send(JSON.stringify({ type: 'response.create', model: 'gpt-4o-mini', input: 'hi', stream: true }))
  await eventually(() => frames.length === 3, 10_000)
  ws.close()
}

describe("a Codex socket's upgrade answer, read with its first call", () => {
  it('is a reading of when the socket opened: the pace from it to the call is not a rise within milliseconds', async () => {
    await socketCall('eyJ.chatgpt.ws-pace-token-aaaa', 4000)
    const called = Date.now()
    const w = (await request(`${t.url}/api/dashboard/plans`)).json().accounts[0].windows[0]
    expect(w).toMatchObject({ name: '5h', utilization: 0.35 })
    // 15% in the 4 s (and more) between the upgrade and the call: the remaining 65% in 17 s or more,
    // not at once (a 15% rise in the milliseconds between the upgrade answer's reading and the event's).
    expect(w.projected_exhausted_at).not.toBeNull()
    expect(Date.parse(w.projected_exhausted_at) - called).toBeGreaterThan(12_000)
  })

  it("an older socket's upgrade answer, read after a newer reading of the window, does not take the window back", async () => {
    // A second Codex session of the account: its socket opened while the window stood at 35%; the
    // first session's calls took it to 50% meanwhile; then the second session's first call.
    upgradeUsed = 35
    const older = new WebSocket(`${t.url.replace('http', 'ws')}/chatgpt/codex/responses`, {
      headers: { authorization: 'Bearer eyJ.chatgpt.ws-pace-token-aaaa', 'chatgpt-account-id': 'acct_pace', originator: 'codex_exec' },
    })
    const frames: string[] = []
    older.on('message', (d) => frames.push(String(d)))
    await new Promise((r, j) => {
      older.on('open', r)
      older.on('error', j)
    })
    upgradeUsed = 50
    eventUsed = 50
    await socketCall('eyJ.chatgpt.ws-pace-token-aaaa', 0)
    const window = async () => (await request(`${t.url}/api/dashboard/plans`)).json().accounts[0].windows[0]
    expect((await window()).utilization).toBe(0.5)
    // The older socket's first call: its upgrade answer (35%) is shown to the tracker as the call
    // is sent; the event (50%) comes with the answer. The window never reads 35% in between.
    const seen: number[] = []
    const off = t.server.context.plans!.subscribe(() => seen.push(t.server.context.plans!.list()[0].windows[0].utilization))
    try {
      older.send(JSON.stringify({ type: 'response.create', model: 'gpt-4o-mini', input: 'hi', stream: true }))
      await eventually(() => frames.length === 3, 10_000)
      expect(seen.length).toBeGreaterThan(0)
      expect(seen.every((u) => u === 0.5)).toBe(true)
    } finally {
      off()
      older.close()
    }
  })
})
