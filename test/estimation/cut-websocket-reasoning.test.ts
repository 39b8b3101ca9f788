import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import WebSocket from 'ws'
import { eventually } from '../support/http'
import { type TestServer, startTestServer } from '../support/server'
import { ledgerRows } from '../support/ledger-rows'
import { type WsUpstream, startWsUpstream } from '../support/ws-upstream'
import { AT_LEAST, PIECES } from './cut-stream'

/**
 * Codex's Responses WebSocket: a turn that streams its reasoning summary (billed as output with the
 * hidden reasoning it sums up) and is then cut by the client closing the socket mid-turn. The call
 * is recorded, estimated, with the summary counted as output.
 */
const RESP = { id: 'resp_ws_reason', object: 'response', model: 'gpt-5-2025-08-07', status: 'in_progress', usage: null }
const FRAMES = [
  JSON.stringify({ type: 'response.created', sequence_number: 0, response: RESP }),
  ...PIECES.map((p, i) => JSON.stringify({ type: 'response.reasoning_summary_text.delta', sequence_number: 1 + i, item_id: 'rs_1', output_index: 0, summary_index: 0, delta: p })),
]

let up: WsUpstream
let t: TestServer
let sent: () => void
const allSent = new Promise<void>((r) => (sent = r))
beforeAll(async () => {
  up = await startWsUpstream({
    onRequest: (req, res) => {
      req.resume()
      res.writeHead(404)
      res.end()
    },
    onConnection: (ws) => {
      ws.on('message', (data) => {
        if (JSON.parse(String(data)).type !== 'response.create') return
        for (const f of FRAMES) ws.send(f)
        sent()
      })
    },
  })
  t = await startTestServer({}, up.url)
})
afterAll(async () => {
  await t.cleanup()
  await up.close()
})

describe('Codex WebSocket: the client leaves while a reasoning summary streams', () => {
  it('the call is recorded, estimated, the summary counted as output', async () => {
    const ws = new WebSocket(`${t.url.replace('http', 'ws')}/v1/responses`, { headers: { authorization: 'Bearer sk-proj-review-ws-reason-0001', 'user-agent': 'codex_exec/0.169.0' } })
    ws.on('error', () => {})
    await new Promise((r) => ws.on('open', r))
    let got = 0
    const all = new Promise<void>((r) => ws.on('message', () => ++got === FRAMES.length && r()))
    ws.send(JSON.stringify({ type: 'response.create', model: 'gpt-5', stream: true, reasoning: { summary: 'auto' }, input: [{ role: 'user', content: [{ type: 'input_text', text: 'Prove it.' }] }] }))
    await allSent
    await all
    ws.terminate()
    const row = await eventually(() => ledgerRows(t.dbFile)[0], 20_000)
    expect(row).toMatchObject({ provider: 'openai', estimated: 1, priced: 1, status: 499, error: 'client_aborted' })
    expect(row.output_tokens).toBeGreaterThan(AT_LEAST)
  })
})
