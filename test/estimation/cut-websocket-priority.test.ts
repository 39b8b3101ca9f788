import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import WebSocket from 'ws'
import { eventually } from '../support/http'
import { type TestServer, startTestServer } from '../support/server'
import { ledgerRows } from '../support/ledger-rows'
import { type WsUpstream, startWsUpstream } from '../support/ws-upstream'

/**
 * Codex's Responses WebSocket: a `response.create` with service_tier "priority" whose response the
 * upstream cuts (closes the socket) after response.created named the Priority tier and text
 * streamed is estimated at gpt-5's Priority price, marked `"fast": true` (it was recorded at the
 * Standard price, half of the bill). The HTTP streams: ./cut-stream-billed-marks.test.ts.
 */
const RESP = { id: 'resp_ws_prio', object: 'response', model: 'gpt-5-2025-08-07', status: 'in_progress', service_tier: 'priority', usage: null }
const text = 'The quick brown fox jumps over the lazy dog. '.repeat(40)
const FRAMES = [
  JSON.stringify({ type: 'response.created', sequence_number: 0, response: RESP }),
  ...Array.from({ length: 6 }, (_, i) => JSON.stringify({ type: 'response.output_text.delta', sequence_number: 1 + i, item_id: 'msg_1', output_index: 0, content_index: 0, delta: text })),
]

let up: WsUpstream
let t: TestServer
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
        setTimeout(() => ws.terminate(), 50)
      })
    },
  })
  t = await startTestServer({}, up.url)
})
afterAll(async () => {
  await t.cleanup()
  await up.close()
})

describe('Codex WebSocket: a Priority response cut by the upstream', () => {
  it('is estimated at the Priority price', async () => {
    const ws = new WebSocket(`${t.url.replace('http', 'ws')}/v1/responses`, { headers: { authorization: 'Bearer sk-proj-review-ws-priority-01', 'user-agent': 'codex_exec/0.169.0' } })
    ws.on('error', () => {})
    await new Promise((r) => ws.on('open', r))
    ws.send(JSON.stringify({ type: 'response.create', model: 'gpt-5', service_tier: 'priority', stream: true, input: [{ role: 'user', content: [{ type: 'input_text', text: 'Write a long story.' }] }] }))
    const row = await eventually(() => ledgerRows(t.dbFile)[0], 20_000)
    ws.terminate()
    expect(row).toMatchObject({ provider: 'openai', estimated: 1, priced: 1 })
    expect(row.output_tokens).toBeGreaterThan(0)
    const priority = (row.input_tokens * 2.5 + row.output_tokens * 20) / 1e6
    const standard = (row.input_tokens * 1.25 + row.output_tokens * 10) / 1e6
    expect({ cost: row.cost_usd, extra: row.usage_extra }, `standard would be ${standard}`).toEqual({ cost: expect.closeTo(priority, 12), extra: expect.stringContaining('"fast":true') })
  })
})
