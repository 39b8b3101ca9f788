import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import WebSocket from 'ws'
import { reduceMemory } from '../../src/main/server/idle-gc'
import { eventually } from '../support/http'
import { ledgerRows } from '../support/ledger-rows'
import { completed, created, resp, usage } from '../support/responses-events'
import { type TestServer, startTestServer } from '../support/server'
import { type WsUpstream, startWsUpstream } from '../support/ws-upstream'

/**
 * What a Responses socket keeps of its lanes (README: WebSockets, Lanes): the last
 * `response.create` of each lane (`stream_id`, the client's to choose) is what a successor the
 * server starts there by itself is recorded as. A client that names lane after lane, each with a
 * frame of up to the body limit, must not grow the server's memory without end on one socket;
 * and a successor in a lane no longer kept is recorded all the same.
 */

type Send = (o: object) => void
/** What the upstream does with each client frame (parsed), per test. */
let script: (f: any, send: Send) => void = () => {}

let up: WsUpstream
let t: TestServer

beforeAll(async () => {
  up = await startWsUpstream({
    onConnection: (ws) => {
      ws.on('message', (data) => {
        let f: any
        try {
          f = JSON.parse(String(data))
        } catch {
          return
        }
        script(f, (o) => ws.send(JSON.stringify(o)))
      })
    },
  })
  t = await startTestServer({ budgets: { rules: [{ api_key_pattern: 'sk-blocked-*', daily_limit_usd: 0, action: 'block' }] } }, up.url)
})
afterAll(async () => {
  await t.cleanup()
  await up.close()
})

function open(key: string): Promise<{ ws: WebSocket; frames: any[] }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`${t.url.replace('http', 'ws')}/v1/responses`, { headers: { authorization: `Bearer ${key}` }, perMessageDeflate: false })
    const frames: any[] = []
    ws.on('message', (d) => frames.push(JSON.parse(String(d))))
    ws.on('open', () => resolve({ ws, frames }))
    ws.on('error', reject)
  })
}

/** A `response.create` in `lane` whose input is about `bytes` long (text of its own, so no two frames share a string). */
const create = (model: string, lane: string, bytes: number) =>
  JSON.stringify({
    type: 'response.create',
    stream_id: lane,
    model,
    input: [{ role: 'user', content: [{ type: 'input_text', text: `${lane} `.padEnd(bytes, `lorem ${lane} ipsum `) }] }],
  })

/** The rows recorded after `before`, once there are `n`. */
const rowsAfter = (before: number, n: number) =>
  eventually(() => {
    const r = ledgerRows(t.dbFile).slice(before)
    return r.length === n ? r : undefined
  }, 60_000) as Promise<any[]>

/** The heap in use after a full collection. */
function heapAfterGc(): number {
  reduceMemory()
  reduceMemory()
  return process.memoryUsage().heapUsed
}

const MiB = 1024 * 1024
/** Lanes a client names on one socket, each with a frame of FRAME bytes: LANES x FRAME held if every lane kept its frame. */
const LANES = 96
const FRAME = MiB

describe("a Responses socket's lanes", () => {
  it('a client naming lane after lane with large frames grows what the socket holds only so far; a successor in a lane no longer kept is recorded', async () => {
    // Each response.create answered and completed in its lane; the last one's lane's answer is
    // followed by a successor the server starts by itself in the first lane (long since evicted).
    script = (f, send) => {
      if (f.type !== 'response.create') return
      const lane = f.stream_id
      const r = resp(`resp_${lane}`, 'gpt-4o-mini-2024-07-18')
      send(created(r, lane))
      send(completed(r, usage(100, 10), lane))
      if (lane === `lane-${LANES - 1}`) {
        const succ = resp('resp_successor', 'gpt-4o-2024-08-06')
        send(created(succ, 'lane-0'))
        send({ type: 'response.output_text.delta', stream_id: 'lane-0', delta: 'more' })
        send(completed(succ, usage(20_000, 500), 'lane-0'))
      }
    }
    const c = await open('sk-test-lanes-bound-0001')
    // Warm up (the tokenizer, the ledger's statements): not what is measured.
    let before = ledgerRows(t.dbFile).length
    c.ws.send(create('gpt-4o', 'warm', 1000))
    await rowsAfter(before, 1)
    const heap0 = heapAfterGc()
    before = ledgerRows(t.dbFile).length
    c.ws.send(create('gpt-4o', 'lane-0', FRAME))
    for (let i = 1; i < LANES; i++) c.ws.send(create('gpt-4o-mini', `lane-${i}`, FRAME))
    const rows = await rowsAfter(before, LANES + 1)
    const grown = heapAfterGc() - heap0
    // Every lane's call, and the successor, recorded with its own model and usage (lane-0 was let
    // go: the successor's model is the one its response.created names).
    expect(rows.filter((r) => r.status === 200 && r.input_tokens === 100 && r.model === 'gpt-4o-mini-2024-07-18').length).toBe(LANES)
    const successor = rows.find((r) => r.response_id === 'resp_successor')
    expect(successor).toMatchObject({ model: 'gpt-4o-2024-08-06', input_tokens: 20_000, output_tokens: 500, status: 200, estimated: 0 })
    expect(successor.cost_usd).toBeGreaterThan(0)
    // Each lane's frame kept would be LANES MiB; what is kept is bounded (8 MiB of frames, and the newest).
    expect(grown).toBeLessThan(32 * MiB)
    c.ws.close()
  })

  it("a lane whose frame is no longer kept whole (other lanes' frames came after it) keeps its settings: its successor is recorded as asked", async () => {
    script = (f, send) => {
      if (f.type !== 'response.create') return
      const lane = f.stream_id
      const r = resp(`resp_${lane}`, 'gpt-4o-mini-2024-07-18')
      send(created(r, lane))
      send(completed(r, usage(100, 10), lane))
      if (lane === 'last') {
        const succ = resp('resp_successor_a', 'gpt-4o-2024-08-06')
        send(created(succ, 'a'))
        send(completed(succ, usage(20_000, 500), 'a'))
      }
    }
    const c = await open('sk-test-lanes-bound-0002')
    const before = ledgerRows(t.dbFile).length
    // 12 MiB of frames after lane a's: more than is kept whole, in fewer lanes than are kept.
    c.ws.send(create('gpt-4o', 'a', FRAME))
    for (let i = 0; i < 12; i++) c.ws.send(create('gpt-4o-mini', `b-${i}`, FRAME))
    c.ws.send(create('gpt-4o-mini', 'last', 1000))
    const rows = await rowsAfter(before, 15)
    c.ws.close()
    expect(rows.find((r) => r.response_id === 'resp_successor_a')).toMatchObject({ requested_model: 'gpt-4o', model: 'gpt-4o-2024-08-06', input_tokens: 20_000, output_tokens: 500, status: 200, estimated: 0 })
  })

  it('lanes named at length (longer than the upstream frames are read for) are not kept for the responses begun in them', async () => {
    script = (f, send) => {
      if (f.type !== 'response.create') return
      // (Not echoing the lane: one this long is not read from an upstream frame anyway, and the
      // client here keeps every frame it gets.)
      const r = resp(`resp_long_${f.input[0].content[0].text.slice(-8)}`, 'gpt-4o-mini-2024-07-18')
      send(created(r))
      send(completed(r, usage(100, 10)))
    }
    const c = await open('sk-test-lanes-bound-0003')
    let before = ledgerRows(t.dbFile).length
    c.ws.send(create('gpt-4o-mini', 'warm', 1000))
    await rowsAfter(before, 1)
    const heap0 = heapAfterGc()
    before = ledgerRows(t.dbFile).length
    for (let i = 0; i < LANES / 2; i++) {
      const lane = `${i}`.padEnd(FRAME, `long lane ${i} `)
      c.ws.send(JSON.stringify({ type: 'response.create', stream_id: lane, model: 'gpt-4o-mini', input: [{ role: 'user', content: [{ type: 'input_text', text: `${i}`.padStart(8, '0') }] }] }))
    }
    const rows = await rowsAfter(before, LANES / 2)
    expect(rows.every((r) => r.status === 200 && r.input_tokens === 100)).toBe(true)
    const grown = heapAfterGc() - heap0
    expect(grown).toBeLessThan(32 * MiB)
    c.ws.close()
  })

  it('a lane a steer was queued in is not kept once the steer is over', async () => {
    // Each steer fails upstream (as for a response that is not running; its lane not echoed, as above).
    script = (f, send) => {
      if (f.type === 'response.steer') send({ type: 'response.steer.failed', steer: { previous_response_id: f.previous_response_id }, error: { message: 'no such response' } })
    }
    const c = await open('sk-test-lanes-bound-0004')
    const active = t.server.proxy.active
    const heap0 = heapAfterGc()
    for (let i = 0; i < LANES / 2; i++) {
      const lane = `${i}`.padEnd(FRAME, `steered lane ${i} `)
      c.ws.send(JSON.stringify({ type: 'response.steer', stream_id: lane, previous_response_id: 'resp_none', input: 'more' }))
    }
    await eventually(() => c.frames.length === LANES / 2, 60_000)
    expect(c.frames.every((f) => f.type === 'response.steer.failed')).toBe(true)
    await eventually(() => t.server.proxy.active === active, 10_000)
    const grown = heapAfterGc() - heap0
    expect(grown).toBeLessThan(32 * MiB)
    c.ws.close()
  })

  it('frames refused by the budgets are not kept', async () => {
    script = () => {}
    const c = await open('sk-blocked-lanes-bound-0001')
    let before = ledgerRows(t.dbFile).length
    c.ws.send(create('gpt-4o', 'warm', 1000))
    await rowsAfter(before, 1)
    const heap0 = heapAfterGc()
    before = ledgerRows(t.dbFile).length
    for (let i = 0; i < LANES; i++) c.ws.send(create('gpt-4o', `refused-${i}`, FRAME))
    const rows = await rowsAfter(before, LANES)
    expect(rows.every((r) => r.status === 429 && r.cost_usd === 0)).toBe(true)
    await eventually(() => c.frames.length === LANES + 1, 60_000)
    const grown = heapAfterGc() - heap0
    expect(grown).toBeLessThan(32 * MiB)
    c.ws.close()
  })
})
