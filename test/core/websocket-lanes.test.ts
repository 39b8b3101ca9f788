import { describe, expect, it } from 'vitest'
import { eventually } from '../support/http'
import { ledgerRows } from '../support/ledger-rows'
import { completed, created, resp, steeredAway, usage } from '../support/responses-events'
import { openSocket, rowsAfter, serverOverWsUpstream } from '../support/ws-sessions'

/**
 * OpenAI's Responses WebSocket beyond one `response.create` at a time (README: WebSocket):
 * lanes (`stream_id`: responses multiplexed on one socket, each event echoing its lane),
 * `response.steer` (input queued for the running response: the server ends it and starts a
 * successor by itself) and frames sent as binary. Each response is one call with its own usage,
 * gated before it is sent.
 */

type Send = (o: object) => void
/** What the upstream does with each client frame (parsed), per test. */
let script: (f: any, send: Send, n: number) => void = () => {}
const seen: { text: string; binary: boolean }[] = []

const s = serverOverWsUpstream(
  {
    onConnection: (ws) => {
      let n = 0
      ws.on('message', (data, binary) => {
        seen.push({ text: String(data), binary })
        let f: any
        try {
          f = JSON.parse(String(data))
        } catch {
          return
        }
        script(f, (o) => ws.send(JSON.stringify(o)), ++n)
      })
    },
  },
  { budgets: { rules: [{ api_key_pattern: 'sk-blocked-*', daily_limit_usd: 0, action: 'block' }] } },
)

const open = (key: string) => openSocket(s.t, '/v1/responses', { headers: { authorization: `Bearer ${key}` } })
const create = (model: string, text: string, lane?: string) =>
  JSON.stringify({ type: 'response.create', ...(lane ? { stream_id: lane } : {}), model, input: [{ role: 'user', content: [{ type: 'input_text', text }] }] })

describe('a Responses socket', () => {
  it('with two lanes in parallel: each call is recorded with its own response, whichever ends first', async () => {
    const A = resp('resp_a', 'gpt-4o-2024-08-06')
    const B = resp('resp_b', 'gpt-4o-mini-2024-07-18')
    script = (_f, send, n) => {
      if (n !== 2) return
      send(created(A, 'a'))
      send(created(B, 'b'))
      // lane b (the small model) finishes first
      send(completed(B, usage(100, 10), 'b'))
      send({ type: 'response.output_text.delta', stream_id: 'a', delta: 'long answer' })
      send(completed(A, usage(50_000, 2_000), 'a'))
    }
    const before = ledgerRows(s.t.dbFile).length
    const c = await open('sk-test-lanes-0001')
    c.ws.send(create('gpt-4o', 'big job', 'a'))
    c.ws.send(create('gpt-4o-mini', 'small job', 'b'))
    const rows = await rowsAfter(s.t, before, 2)
    c.ws.close()
    const byRequested = Object.fromEntries(rows.map((r) => [r.requested_model, r]))
    expect(byRequested['gpt-4o']).toMatchObject({ model: 'gpt-4o-2024-08-06', input_tokens: 50_000, output_tokens: 2_000, status: 200 })
    expect(byRequested['gpt-4o-mini']).toMatchObject({ model: 'gpt-4o-mini-2024-07-18', input_tokens: 100, output_tokens: 10, status: 200 })
  })

  it("with a lane refused by the provider before its response began while another streams: the refused one at $0, the other billed once", async () => {
    const A = resp('resp_a2', 'gpt-4o-2024-08-06')
    script = (_f, send, n) => {
      if (n !== 2) return
      send(created(A, 'a'))
      send({ type: 'error', stream_id: 'b', status: 429, error: { type: 'rate_limit_exceeded', message: 'slow down' } })
      send({ type: 'response.output_text.delta', stream_id: 'a', delta: 'x'.repeat(2000) })
      send(completed(A, usage(50_000, 2_000), 'a'))
    }
    const before = ledgerRows(s.t.dbFile).length
    const c = await open('sk-test-lanes-0002')
    c.ws.send(create('gpt-4o', 'lorem ipsum dolor sit amet '.repeat(5000), 'a'))
    c.ws.send(create('gpt-4o-mini', 'small job', 'b'))
    const rows = await rowsAfter(s.t, before, 2)
    c.ws.close()
    // (a refusal's row names the model asked for: its requested_model is null)
    const byRequested = Object.fromEntries(rows.map((r) => [r.requested_model ?? r.model, r]))
    expect(byRequested['gpt-4o-mini']).toMatchObject({ status: 429, cost_usd: 0, estimated: 0 })
    expect(byRequested['gpt-4o']).toMatchObject({ status: 200, input_tokens: 50_000, output_tokens: 2_000, estimated: 0 })
  })

  it("refused by a budget in one lane: the error frame names the lane, so the client can route it", async () => {
    script = () => {}
    const before = ledgerRows(s.t.dbFile).length
    const c = await open('sk-blocked-lanes-0001')
    c.ws.send(create('gpt-4o', 'hello', 'lane-7'))
    await eventually(() => c.frames.length === 1, 10_000)
    expect(c.frames[0]).toMatchObject({ type: 'error', status: 429, stream_id: 'lane-7' })
    expect((await rowsAfter(s.t, before, 1))[0]).toMatchObject({ status: 429, cost_usd: 0 })
    c.ws.close()
  })

  it("steered: the response the server starts by itself (a successor) is recorded and priced as a call of its own", async () => {
    const R1 = resp('resp_s1', 'gpt-4o-2024-08-06')
    const R2 = resp('resp_s2', 'gpt-4o-2024-08-06')
    script = (f, send) => {
      if (f.type === 'response.create') {
        send(created(R1))
        send({ type: 'response.output_text.delta', delta: 'working on it' })
      }
      if (f.type === 'response.steer') {
        send({ type: 'response.steer.accepted', steer: { id: 'steer_1' } })
        send(steeredAway(R1, usage(10_000, 100)))
        send(created(R2))
        send({ type: 'response.output_text.delta', delta: 'steered answer' })
        send(completed(R2, usage(12_000, 3_000)))
      }
    }
    const before = ledgerRows(s.t.dbFile).length
    const c = await open('sk-test-steer-0001')
    c.ws.send(create('gpt-4o', 'refactor the parser'))
    await eventually(() => c.frames.length === 2, 10_000)
    c.ws.send(JSON.stringify({ type: 'response.steer', previous_response_id: 'resp_s1', input: [{ role: 'user', content: [{ type: 'input_text', text: 'only the lexer' }] }] }))
    const rows = await rowsAfter(s.t, before, 2)
    c.ws.close()
    expect(rows.map((r) => [r.response_id, r.requested_model, r.model, r.input_tokens, r.output_tokens, r.status, r.estimated])).toEqual([
      ['resp_s1', 'gpt-4o', 'gpt-4o-2024-08-06', 10_000, 100, 200, 0],
      ['resp_s2', 'gpt-4o', 'gpt-4o-2024-08-06', 12_000, 3_000, 200, 0],
    ])
    expect(rows.every((r) => r.cost_usd > 0)).toBe(true)
  })

  it('steered by a key over its block limit: the steer is refused (response.steer.failed), not sent, so no successor starts', async () => {
    script = () => {}
    const before = ledgerRows(s.t.dbFile).length
    const sent = seen.length
    // Codex, which gets the refusal in the form it stops on; any other client the contract's.
    const codex = { 'user-agent': 'codex_exec/0.169.0 (Debian 12.0.0; x86_64) xterm (codex_exec; 0.169.0)', originator: 'codex_exec' }
    const c = await openSocket(s.t, '/v1/responses', { headers: { ...codex, authorization: 'Bearer sk-blocked-steer-0001' } })
    c.ws.send(JSON.stringify({ type: 'response.steer', previous_response_id: 'resp_x', input: 'more' }))
    await eventually(() => c.frames.length === 1, 10_000)
    // As OpenAI answers steering input it will not commit: the input handed back.
    expect(c.frames[0]).toMatchObject({ type: 'response.steer.failed', status: 429, steer: { previous_response_id: 'resp_x', input: 'more' }, error: { type: 'usage_limit_reached' } })
    const bare = await open('sk-blocked-steer-0002')
    bare.ws.send(JSON.stringify({ type: 'response.steer', previous_response_id: 'resp_y', input: 'more' }))
    await eventually(() => bare.frames.length === 1, 10_000)
    bare.ws.close()
    expect(bare.frames[0]).toMatchObject({ type: 'response.steer.failed', status: 429, error: { type: 'budget_exceeded' } })
    for (const r of await rowsAfter(s.t, before, 2)) expect(r).toMatchObject({ status: 429, cost_usd: 0 })
    c.ws.close()
    expect(seen.length).toBe(sent)
  })

  it('a steer that fails frees what it held, and records nothing', async () => {
    script = (f, send) => {
      if (f.type === 'response.steer') send({ type: 'response.steer.failed', steer: { previous_response_id: 'resp_none', input: 'x' }, error: { message: 'no such response' } })
    }
    const before = ledgerRows(s.t.dbFile).length
    const active = s.t.server.proxy.active
    const c = await open('sk-test-steer-0002')
    c.ws.send(JSON.stringify({ type: 'response.steer', previous_response_id: 'resp_none', input: 'more' }))
    await eventually(() => c.frames.length === 1, 10_000)
    expect(c.frames[0].type).toBe('response.steer.failed')
    await eventually(() => s.t.server.proxy.active === active, 10_000)
    c.ws.close()
    expect(ledgerRows(s.t.dbFile).length).toBe(before)
  })

  it('a response.create sent as a binary frame is gated like a text one; binary that is not JSON passes unchanged', async () => {
    script = () => {}
    const before = ledgerRows(s.t.dbFile).length
    const sent = seen.length
    const c = await open('sk-blocked-binary-0001')
    c.ws.send(Buffer.from(JSON.stringify({ type: 'response.create', model: 'gpt-4o', input: 'hello' })), { binary: true })
    await eventually(() => c.frames.length === 1, 10_000)
    expect(c.frames[0]).toMatchObject({ type: 'error', status: 429 })
    expect((await rowsAfter(s.t, before, 1))[0]).toMatchObject({ status: 429, cost_usd: 0 })
    c.ws.send(Buffer.from([0, 1, 2, 255]), { binary: true })
    await eventually(() => seen.length === sent + 1, 10_000)
    expect(seen[sent].binary).toBe(true)
    // Nor does one that begins as JSON does but is not JSON: it is not a create either.
    c.ws.send(Buffer.from([0x7b, 0x00, 0xff, 0x10]), { binary: true })
    await eventually(() => seen.length === sent + 2, 10_000)
    expect(seen[sent + 1].binary).toBe(true)
    expect(c.frames.length).toBe(1)
    c.ws.close()
  })
})
