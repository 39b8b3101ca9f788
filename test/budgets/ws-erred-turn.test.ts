import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import WebSocket from 'ws'
import { budgetsOf } from '../../src/main/budgets'
import { hashKey } from '../../src/main/proxy/attribution'
import { eventually } from '../support/http'
import { type TestServer, startTestServer } from '../support/server'
import { type WsUpstream, startWsUpstream } from '../support/ws-upstream'
import { callsOf } from './support'

/**
 * A Responses WebSocket turn the upstream ends with an `error` frame after its response began,
 * and no `response.failed` after it: the agent has its error and its turn is over, and the socket
 * stays open between turns (Codex keeps it for the session). The call waited for a terminal event
 * until the next response or the socket's close, holding its budget reservation all that time: a
 * $0.04 block rule refused every other call of the key ("calls still in flight are expected to
 * cost $0.041") for as long as the idle socket stayed open. After `upstream.idle_timeout_ms` with
 * no frame of it, the call is recorded as it stands, and its reservation freed.
 */
const KEY = 'sk-erred-turn-aaaaaaaaaaaa-0001'
const IDLE_MS = 800

let up: WsUpstream
let t: TestServer
let turns = 0

beforeAll(async () => {
  up = await startWsUpstream({
    onConnection: (ws) => {
      ws.on('message', (data, binary) => {
        if (binary || JSON.parse(String(data)).type !== 'response.create') return
        const resp = { id: `resp_erred${++turns}`, object: 'response', model: 'gpt-5-2025-08-07', status: 'in_progress' }
        ws.send(JSON.stringify({ type: 'response.created', sequence_number: 0, response: resp }))
        ws.send(JSON.stringify({ type: 'response.output_text.delta', sequence_number: 1, delta: 'Working on it' }))
        if (turns === 1) {
          // The first turn fails mid-response: an error, then nothing more on the open socket.
          ws.send(JSON.stringify({ type: 'error', status: 500, error: { type: 'server_error', code: 'server_error', message: 'The server had an error.' } }))
          return
        }
        const usage = { input_tokens: 20, input_tokens_details: { cached_tokens: 0 }, output_tokens: 5, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 25 }
        ws.send(JSON.stringify({ type: 'response.completed', sequence_number: 2, response: { ...resp, status: 'completed', usage } }))
      })
    },
  })
  t = await startTestServer(
    { timezone: 'UTC', upstream: { idle_timeout_ms: IDLE_MS }, budgets: { rules: [{ api_key_pattern: 'sk-erred-turn-*', daily_limit_usd: 0.04, action: 'block' }] } },
    up.url,
  )
})
afterAll(async () => {
  await t.cleanup()
  await up.close()
})

function open(): Promise<{ ws: WebSocket; frames: any[] }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`${t.url.replace('http', 'ws')}/v1/responses`, {
      headers: { authorization: `Bearer ${KEY}`, 'user-agent': 'codex_exec/0.169.0', 'openai-beta': 'responses_websockets=2026-02-06' },
    })
    const frames: any[] = []
    ws.on('message', (d) => frames.push(JSON.parse(String(d))))
    ws.on('open', () => resolve({ ws, frames }))
    ws.on('error', reject)
  })
}

const create = JSON.stringify({ type: 'response.create', model: 'gpt-5', input: [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'go on' }] }], stream: true })

describe('a Responses socket turn that ended in an error mid-response, on a socket left open', () => {
  it('is recorded once the upstream has been quiet for idle_timeout_ms, and frees its reservation for the key’s other calls', async () => {
    const first = await open()
    first.ws.send(create)
    await eventually(() => first.frames.some((f) => f.type === 'error'))
    // The socket stays open and quiet: the erred turn is recorded all the same, as a cut stream.
    const rows = (await eventually(() => {
      const r = callsOf(t, KEY)
      return r.length === 1 ? r : null
    }))!
    expect(rows[0]).toMatchObject({ status: 200, error: 'server_error' })
    expect(rows[0].cost_usd).toBeGreaterThan(0)
    expect(first.ws.readyState).toBe(WebSocket.OPEN)
    const meter = budgetsOf(t.server.context).engine.status().flatMap((r) => r.keys).find((k) => k.key.hash === hashKey(KEY))!.meter
    expect({ inFlight: meter.inFlight, reservedUsd: meter.reservedUsd }).toEqual({ inFlight: 0, reservedUsd: 0 })

    // Another session of the key is no longer refused for that turn's reservation.
    const second = await open()
    second.ws.send(create)
    await eventually(() => second.frames.some((f) => f.type === 'response.completed' || f.type === 'error'))
    expect(second.frames.find((f) => f.type === 'error')).toBeUndefined()
    first.ws.close()
    second.ws.close()
  })
})
