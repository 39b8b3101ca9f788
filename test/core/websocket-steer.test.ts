import { describe, expect, it } from 'vitest'
import { eventually } from '../support/http'
import { keyHash } from '../dashboard/seed'
import { ledgerRows } from '../support/ledger-rows'
import { completed, created, resp, steeredAway, usage } from '../support/responses-events'
import { openSocket, serverOverWsUpstream } from '../support/ws-sessions'

/**
 * `response.steer` on a Responses socket (README: WebSocket, Steering) at its edges: a successor
 * that never starts is timed as a response that never answers; a refused steer is answered as
 * OpenAI answers steering input it will not commit; a steer's settings are its response's, with
 * lanes echoed by the upstream or not; steers that end without a successor free what they held.
 */

type Send = (o: object) => void
let script: (f: any, send: Send, n: number) => void = () => {}

const FIRST_BYTE_MS = 1000
const IDLE_MS = 800

const s = serverOverWsUpstream(
  {
    onConnection: (ws) => {
      let n = 0
      ws.on('message', (data) => {
        let f: any
        try {
          f = JSON.parse(String(data))
        } catch {
          return
        }
        script(f, (o) => ws.readyState === ws.OPEN && ws.send(JSON.stringify(o)), ++n)
      })
    },
  },
  {
    upstream: { connect_timeout_ms: 5000, first_byte_timeout_ms: FIRST_BYTE_MS, idle_timeout_ms: IDLE_MS },
    budgets: { rules: [{ api_key_pattern: 'sk-blocked-*', daily_limit_usd: 0, action: 'block' }, { api_key_pattern: 'sk-tight-*', daily_limit_usd: 1, action: 'block' }, { api_key_pattern: 'sk-rpm-*', model_pattern: 'gpt-4o*', requests_per_minute: 1, action: 'block' }] },
  },
)

const open = (key: string) => openSocket(s.t, '/v1/responses', { headers: { authorization: `Bearer ${key}` } })
const create = (model: string, text: string, lane?: string) =>
  JSON.stringify({ type: 'response.create', ...(lane ? { stream_id: lane } : {}), model, input: [{ role: 'user', content: [{ type: 'input_text', text }] }] })
const steer = (prev: string, text: string) => JSON.stringify({ type: 'response.steer', previous_response_id: prev, input: text })

describe('steering a Responses socket', () => {
  it('a successor that never starts after a steered response.incomplete is timed like any response (first_byte_timeout_ms)', async () => {
    const R1 = resp('resp_stall1', 'gpt-4o-2024-08-06')
    script = (f, send) => {
      if (f.type === 'response.create') {
        send(created(R1))
        send({ type: 'response.output_text.delta', delta: 'working' })
      }
      if (f.type === 'response.steer') {
        send({ type: 'response.steer.accepted', steer: { id: 'steer_1' } })
        send(steeredAway(R1, usage(1000, 10)))
        // ...and then the provider goes silent: the successor never begins.
      }
    }
    const active = s.t.server.proxy.active
    const c = await open('sk-test-steer-stall-1')
    c.ws.send(create('gpt-4o', 'refactor'))
    await eventually(() => c.frames.length === 2, 10_000)
    c.ws.send(steer('resp_stall1', 'only the lexer'))
    await eventually(() => c.frames.length === 4, 10_000)
    // The provider goes silent: after first_byte_timeout_ms the agent's socket is closed (1014), not left on a dead turn.
    expect((await c.closed).code).toBe(1014)
    await eventually(() => s.t.server.proxy.active === active, 10_000)
    // The steer is recorded as a response.create no answer came for: 504 at $0.
    const rows = (await eventually(() => {
      const r = ledgerRows(s.t.dbFile).filter((x: any) => x.api_key_hash === keyHash('sk-test-steer-stall-1'))
      return r.length === 2 ? r : undefined
    }, 10_000)) as any[]
    expect(rows.map((r: any) => [r.status, r.error, r.cost_usd])).toEqual([[200, null, rows[0].cost_usd], [504, 'upstream_timeout', 0]])
  })

  it("a steer refused by a budget (the steer names no lane) is answered as response.steer.failed, not as an error of the running response's lane", async () => {
    const X = resp('resp_tight_a', 'gpt-4o-2024-08-06')
    const Y = resp('resp_tight_b', 'gpt-4o-2024-08-06')
    let sendY: Send = () => {}
    script = (f, send) => {
      if (f.type === 'response.create' && f.stream_id === 'b') {
        sendY = send
        send(created(Y, 'b'))
        send({ type: 'response.output_text.delta', stream_id: 'b', delta: 'working' })
      }
      if (f.type === 'response.create' && f.stream_id === 'a') {
        send(created(X, 'a'))
        send(completed(X, usage(1_000_000, 10), 'a'))
      }
    }
    const before = ledgerRows(s.t.dbFile).length
    const c = await open('sk-tight-steer-0001')
    c.ws.send(create('gpt-4o', 'long job', 'b'))
    await eventually(() => c.frames.length === 2, 10_000)
    c.ws.send(create('gpt-4o', 'big prompt', 'a'))
    await eventually(() => ledgerRows(s.t.dbFile).length === before + 1, 10_000)
    // The key is now over its limit; the user steers lane b's response (a steer has no stream_id).
    c.ws.send(steer('resp_tight_b', 'only the lexer'))
    await eventually(() => c.frames.length === 5, 10_000)
    sendY(completed(Y, usage(100, 10), 'b'))
    await eventually(() => c.frames.length === 6, 10_000)
    c.ws.close()
    // OpenAI answers rejected steering input with response.steer.failed (returning the input);
    // an `error` in lane b would tell the client that lane b's response failed, yet it goes on and completes.
    expect(c.frames[4]).toMatchObject({ type: 'response.steer.failed', stream_id: 'b', steer: { previous_response_id: 'resp_tight_b', input: 'only the lexer' } })
    expect(c.frames[5]).toMatchObject({ type: 'response.completed', stream_id: 'b' })
  })

  it('mixed socket: a lane-less create beside a laned one, and a steer of the laned response', async () => {
    const X = resp('resp_mx', 'gpt-4o-mini-2024-07-18')
    const Y = resp('resp_my', 'gpt-4o-2024-08-06')
    const Y2 = resp('resp_my2', 'gpt-4o-2024-08-06')
    let sendAll: Send = () => {}
    script = (f, send) => {
      sendAll = send
      if (f.type === 'response.create' && !f.stream_id) {
        send(created(X))
        send({ type: 'response.output_text.delta', delta: 'x' })
      }
      if (f.type === 'response.create' && f.stream_id === 'b') {
        send(created(Y, 'b'))
        send({ type: 'response.output_text.delta', stream_id: 'b', delta: 'y' })
      }
      if (f.type === 'response.steer') {
        send({ type: 'response.steer.accepted', stream_id: 'b', steer: { id: 'steer_m' } })
        send(steeredAway(Y, usage(3000, 30), 'b'))
        send(created(Y2, 'b'))
        send(completed(Y2, usage(4000, 40), 'b'))
        send(completed(X, usage(100, 1)))
      }
    }
    const before = ledgerRows(s.t.dbFile).length
    const active = s.t.server.proxy.active
    const c = await open('sk-test-steer-mixed')
    c.ws.send(create('gpt-4o-mini', 'plain'))
    await eventually(() => c.frames.length === 2, 10_000)
    c.ws.send(create('gpt-4o', 'laned', 'b'))
    await eventually(() => c.frames.length === 4, 10_000)
    c.ws.send(steer('resp_my', 'change'))
    const rows = (await eventually(() => {
      const r = ledgerRows(s.t.dbFile).slice(before).filter((x: any) => String(x.response_id).startsWith('resp_m'))
      return r.length === 3 ? r : undefined
    }, 10_000)) as any[]
    await eventually(() => s.t.server.proxy.active === active, 10_000)
    c.ws.close()
    void sendAll
    const got = Object.fromEntries(rows.map((r) => [r.response_id, [r.model, r.input_tokens, r.output_tokens, r.status]]))
    expect(got).toEqual({
      resp_mx: ['gpt-4o-mini-2024-07-18', 100, 1, 200],
      resp_my: ['gpt-4o-2024-08-06', 3000, 30, 200],
      resp_my2: ['gpt-4o-2024-08-06', 4000, 40, 200],
    })
  })

  it('an upstream that does not echo stream_id: a laned create steered; the successor is recorded with its model and cost', async () => {
    const A = resp('resp_ne1', 'gpt-4o-2024-08-06')
    const A2 = resp('resp_ne2', 'gpt-4o-2024-08-06')
    script = (f, send) => {
      if (f.type === 'response.create') {
        send(created(A))
        send({ type: 'response.output_text.delta', delta: 'x' })
      }
      if (f.type === 'response.steer') {
        send({ type: 'response.steer.accepted', steer: { id: 'steer_ne' } })
        send(steeredAway(A, usage(3000, 30)))
        send(created(A2))
        send(completed(A2, usage(4000, 40)))
      }
    }
    const before = ledgerRows(s.t.dbFile).length
    const active = s.t.server.proxy.active
    const c = await open('sk-test-steer-noecho')
    c.ws.send(create('gpt-4o', 'laned', 'a'))
    await eventually(() => c.frames.length === 2, 10_000)
    c.ws.send(steer('resp_ne1', 'change'))
    const rows = (await eventually(() => {
      const r = ledgerRows(s.t.dbFile).slice(before)
      return r.length === 2 ? r : undefined
    }, 10_000)) as any[]
    await eventually(() => s.t.server.proxy.active === active, 10_000)
    c.ws.close()
    expect(rows.map((r) => [r.response_id, r.requested_model, r.model])).toEqual([
      ['resp_ne1', 'gpt-4o', 'gpt-4o-2024-08-06'],
      ['resp_ne2', 'gpt-4o', 'gpt-4o-2024-08-06'],
    ])
  })

  it('a steer on a socket where no response.create was sent; the server starts a successor: recorded once, active back', async () => {
    const S = resp('resp_nc', 'gpt-4o-2024-08-06')
    script = (f, send) => {
      if (f.type === 'response.steer') {
        send({ type: 'response.steer.accepted', steer: { id: 'steer_nc' } })
        send(created(S))
        send(completed(S, usage(1000, 10)))
      }
    }
    const before = ledgerRows(s.t.dbFile).length
    const active = s.t.server.proxy.active
    const c = await open('sk-test-steer-nocreate')
    c.ws.send(steer('resp_old', 'go on'))
    const rows = (await eventually(() => {
      const r = ledgerRows(s.t.dbFile).slice(before)
      return r.length === 1 ? r : undefined
    }, 10_000)) as any[]
    await eventually(() => s.t.server.proxy.active === active, 10_000)
    c.ws.close()
    expect(rows[0]).toMatchObject({ response_id: 'resp_nc', model: 'gpt-4o-2024-08-06', input_tokens: 1000, status: 200 })
    expect(rows[0].cost_usd).toBeGreaterThan(0)
  })

  for (const echo of [true, false]) {
    it(`a steer of a laned gpt-4o response is gated by a gpt-4o rule (upstream ${echo ? 'echoes' : 'does not echo'} stream_id)`, async () => {
      const A = resp(`resp_rpm_${echo}`, 'gpt-4o-2024-08-06')
      const lane = echo ? { stream_id: 'a' } : {}
      let steered = 0
      script = (f, send) => {
        if (f.type === 'response.create') {
          send({ type: 'response.created', ...lane, response: A })
          send({ type: 'response.output_text.delta', ...lane, delta: 'x' })
        }
        if (f.type === 'response.steer') steered++
      }
      const c = await open(`sk-rpm-steer-${echo}`)
      c.ws.send(create('gpt-4o', 'laned', 'a'))
      await eventually(() => c.frames.length === 2, 10_000)
      // requests_per_minute: 1 for gpt-4o*: this steer (a second gpt-4o call in the minute) is refused.
      c.ws.send(steer(A.id, 'change'))
      // Refused before it is sent (a second gpt-4o request in the rule's minute).
      await eventually(() => c.frames.length === 3, 10_000)
      c.ws.close()
      expect({ steered, refusal: c.frames[2].type }).toEqual({ steered: 0, refusal: 'response.steer.failed' })
    })
  }

  it('pending steer (tool output) then the explicit continuation; and two steers into one successor: rows and active right', async () => {
    const R1 = resp('resp_p1', 'gpt-4o-2024-08-06')
    const R2 = resp('resp_p2', 'gpt-4o-2024-08-06')
    const R3 = resp('resp_p3', 'gpt-4o-2024-08-06')
    let steers = 0
    script = (f, send, n) => {
      if (f.type === 'response.create' && n === 1) {
        send(created(R1))
        send({ type: 'response.output_text.delta', delta: 'w' })
      }
      if (f.type === 'response.steer' && ++steers === 1) {
        send({ type: 'response.steer.accepted', steer: { id: 'st1' } })
        send(completed(R1, usage(1000, 10)))
        send({ type: 'response.steer.pending', reason: 'waiting_for_required_input', steer: { id: 'st1' } })
      }
      if (f.type === 'response.create' && n > 1) {
        send(created(R2))
        send({ type: 'response.output_text.delta', delta: 'w' })
      }
      if (f.type === 'response.steer' && steers === 3) {
        send({ type: 'response.steer.accepted', steer: { id: 'st2' } })
        send({ type: 'response.steer.accepted', steer: { id: 'st3' } })
        send(steeredAway(R2, usage(2000, 20)))
        send(created(R3))
        send(completed(R3, usage(3000, 30)))
      }
    }
    // (the previous tests' sockets close asynchronously: start from a quiet server)
    await eventually(() => s.t.server.proxy.active === 0, 10_000)
    const before = ledgerRows(s.t.dbFile).length
    const active = s.t.server.proxy.active
    const c = await open('sk-test-steer-pending')
    c.ws.send(create('gpt-4o', 'go'))
    await eventually(() => c.frames.length === 2, 10_000)
    c.ws.send(steer('resp_p1', 'also this'))
    await eventually(() => c.frames.length === 5, 10_000)
    await eventually(() => s.t.server.proxy.active === active, 10_000)
    c.ws.send(JSON.stringify({ type: 'response.create', model: 'gpt-4o', previous_response_id: 'resp_p1', input: [{ type: 'function_call_output', call_id: 'c1', output: 'ok' }] }))
    await eventually(() => c.frames.length === 7, 10_000)
    c.ws.send(steer('resp_p2', 'one'))
    c.ws.send(steer('resp_p2', 'two'))
    const rows = (await eventually(() => {
      const r = ledgerRows(s.t.dbFile).slice(before).filter((x: any) => String(x.response_id).startsWith('resp_p'))
      return r.length === 3 ? r : undefined
    }, 10_000)) as any[]
    await eventually(() => s.t.server.proxy.active === active, 10_000)
    c.ws.close()
    expect(rows.map((r) => [r.response_id, r.input_tokens, r.status])).toEqual([
      ['resp_p1', 1000, 200],
      ['resp_p2', 2000, 200],
      ['resp_p3', 3000, 200],
    ])
  })

  it('a steer sent between turns (after its response completed) whose successor never starts is timed too', async () => {
    const R1 = resp('resp_stall2', 'gpt-4o-2024-08-06')
    script = (f, send) => {
      if (f.type === 'response.create') {
        send(created(R1))
        send(completed(R1, usage(1000, 10)))
      }
      if (f.type === 'response.steer') send({ type: 'response.steer.accepted', steer: { id: 'steer_2' } })
    }
    const active = s.t.server.proxy.active
    const c = await open('sk-test-steer-stall-2')
    c.ws.send(create('gpt-4o', 'refactor'))
    await eventually(() => c.frames.length === 2, 10_000)
    c.ws.send(steer('resp_stall2', 'and the tests'))
    await eventually(() => c.frames.length === 3, 10_000)
    expect((await c.closed).code).toBe(1014)
    await eventually(() => s.t.server.proxy.active === active, 10_000)
  })
})
