import diagnostics from 'node:diagnostics_channel'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import WebSocket from 'ws'
import { budgetsOf } from '../../src/main/budgets'
import type { RunawayDetector } from '../../src/main/budgets/runaway'
import { getJson } from '../dashboard/seed'
import { fixture } from '../support/fixtures'
import { eventually, postJson } from '../support/http'
import { type TestServer, startTestServer } from '../support/server'
import { callsOf } from './support'
import { type WsUpstream, startWsUpstream } from '../support/ws-upstream'

/**
 * The runaway loop check when it cannot refuse a call (`warn`): it runs after the call has been
 * sent upstream, and its warning header still reaches the client on the call that trips it,
 * whatever the answer (a body, a stream, an answer that comes before the check has run), and
 * every count, event and refusal is what a check on arrival gave. `block` still decides first.
 */

const HEADER = 'x-burnrate-runaway-warning'
const JSON_ANSWER = fixture('anthropic/messages-nonstream-basic.json')
const SSE_ANSWER = fixture('anthropic/messages-stream-text.sse')

let up: WsUpstream | undefined
/** Requests the upstream got, by session (named in the first message: x-burnrate-* headers are not passed on). */
const received: string[] = []
let warn: TestServer
let block: TestServer

function responsesAnswer(n: number): string[] {
  const resp = { id: `resp_${n}`, object: 'response', model: 'gpt-4o-mini-2024-07-18', status: 'in_progress' }
  const usage = { input_tokens: 100 + n, output_tokens: 10, total_tokens: 110 + n }
  return [
    JSON.stringify({ type: 'response.created', sequence_number: 0, response: resp }),
    JSON.stringify({ type: 'response.completed', sequence_number: 1, response: { ...resp, status: 'completed', usage } }),
  ]
}

beforeAll(async () => {
  up = await startWsUpstream({
    onRequest: (req, res) => {
      const parts: Buffer[] = []
      req.on('data', (c) => parts.push(c))
      req.on('end', () => {
        const body = JSON.parse(Buffer.concat(parts).toString('utf8'))
        received.push(String(body.messages?.[0]?.content ?? '').replace('fix the parser in ', ''))
        const stream = body.stream === true
        const answer = stream ? SSE_ANSWER : JSON_ANSWER
        res.writeHead(200, { 'content-type': stream ? 'text/event-stream' : 'application/json', 'content-length': answer.length })
        res.end(answer)
      })
    },
    onConnection: (ws) => {
      let n = 0
      ws.on('message', (data) => {
        if (JSON.parse(String(data)).type === 'response.create') for (const f of responsesAnswer(++n)) ws.send(f)
      })
    },
  })
  // Kept-alive connections stay open for the whole file: the ordering test needs a connection ready.
  up.http.keepAliveTimeout = 120_000
  const upstream = up.url
  warn = await startTestServer(
    {
      runaway: { loop: { action: 'warn', repeats: 3 } },
      budgets: { rules: [{ api_key_pattern: 'sk-ant-rated-*', requests_per_minute: 2, action: 'block' }] },
    },
    upstream,
  )
  block = await startTestServer({ runaway: { loop: { action: 'block', repeats: 3 } } }, upstream)
})
afterAll(async () => {
  await warn?.cleanup()
  await block?.cleanup()
  await up?.close()
})

const KEY = 'sk-ant-api03-deferred-0001'
const msg = (role: string, text: string) => ({ role, content: text })

/** Turn n of an agent stuck on one failing command: the conversation grows, its last two messages stay the same. */
function stuck(n: number, session: string): unknown[] {
  const messages = [msg('user', `fix the parser in ${session}`)]
  for (let i = 0; i < n; i++) messages.push(msg('assistant', 'npm test'), msg('user', 'Error: Cannot find module src/parser.ts'))
  return messages
}

function call(t: TestServer, session: string, messages: unknown[], opts: { stream?: boolean; key?: string } = {}) {
  return postJson(
    `${t.url}/v1/messages`,
    { model: 'claude-sonnet-4-5', max_tokens: 64, messages, ...(opts.stream ? { stream: true } : {}) },
    { 'x-api-key': opts.key ?? KEY, 'anthropic-version': '2023-06-01', 'x-burnrate-session': session },
  )
}

function detectorOf(t: TestServer): RunawayDetector {
  return budgetsOf(t.server.context).runaway
}

async function loopMarks(t: TestServer, session: string) {
  const marks = (await getJson(`${t.url}/api/dashboard/alerts`)).body.runaway as { kind: string; session: string; repeats: number }[]
  return marks.filter((m) => m.kind === 'loop' && m.session === session)
}

/**
 * What happened, in order: `sent` when undici has written a request's body to the upstream's
 * socket (its diagnostics channel, published in the write itself), `check` when the detector
 * checks a call, `event` when it announces one. An order of events, not a measure of time.
 */
function recordOrder(t: TestServer) {
  const log: string[] = []
  const onSent = () => log.push('sent')
  diagnostics.subscribe('undici:request:bodySent', onSent)
  const d = detectorOf(t)
  const inner = d as unknown as { evaluate: (...a: unknown[]) => unknown }
  const original = inner.evaluate
  const evaluate = vi.spyOn(inner, 'evaluate').mockImplementation(function (this: unknown, ...a: unknown[]) {
    log.push('check')
    return original.apply(this, a)
  })
  const off = d.onEvent(() => log.push('event'))
  return {
    log,
    stop() {
      diagnostics.unsubscribe('undici:request:bodySent', onSent)
      evaluate.mockRestore()
      off()
    },
  }
}

describe('warn: the loop check runs after the dispatch, its header still on the call that trips it', () => {
  it('non-streaming: no header on the first two identical tails, the warning on the third and fourth; one event', async () => {
    const session = 'deferred-json'
    for (const n of [1, 2]) {
      const r = await call(warn, session, stuck(n, session))
      expect(r.status).toBe(200)
      expect(r.headers[HEADER]).toBeUndefined()
    }
    const third = await call(warn, session, stuck(3, session))
    expect(third.status).toBe(200)
    expect(third.headers[HEADER]).toBe(`loop: the same request tail 3 times in session ${session}`)
    expect((await call(warn, session, stuck(4, session))).headers[HEADER]).toBe(`loop: the same request tail 4 times in session ${session}`)
    expect(await loopMarks(warn, session)).toEqual([expect.objectContaining({ action: 'warn', repeats: 3 })])
    expect(received.filter((s) => s === session)).toHaveLength(4)
    await eventually(() => callsOf(warn, KEY).length >= 4)
  })

  it('streaming: the warning is on the stream’s headers of the call that trips it', async () => {
    const session = 'deferred-sse'
    for (const n of [1, 2]) expect((await call(warn, session, stuck(n, session), { stream: true })).headers[HEADER]).toBeUndefined()
    const r = await call(warn, session, stuck(3, session), { stream: true })
    expect(r.status).toBe(200)
    expect(r.headers['content-type']).toContain('text/event-stream')
    expect(r.headers[HEADER]).toBe(`loop: the same request tail 3 times in session ${session}`)
    expect(await loopMarks(warn, session)).toHaveLength(1)
  })

  it('the check runs after undici has written the request upstream (an order of events, on a kept-alive connection)', async () => {
    // A call first, so that a kept-alive connection is ready and the request is written in the dispatch itself.
    expect((await call(warn, 'deferred-order-warmup', stuck(1, 'deferred-order-warmup'))).status).toBe(200)
    const order = recordOrder(warn)
    try {
      const session = 'deferred-order'
      for (const n of [1, 2, 3]) await call(warn, session, stuck(n, session))
      expect(order.log).toEqual(['sent', 'check', 'sent', 'check', 'sent', 'check', 'event'])
    } finally {
      order.stop()
    }
  })

  it('an answer whose headers come before the deferred check has run: the check runs then, once, and its header is on the answer', async () => {
    const d = detectorOf(warn) as unknown as { settleUntil: () => void }
    const held: (() => void)[] = []
    const original = globalThis.setImmediate
    // The detector's immediates are held back: only the answer's headers can run the checks.
    const spy = vi.spyOn(globalThis, 'setImmediate').mockImplementation(((fn: (...a: unknown[]) => void, ...args: unknown[]) => {
      if (fn === d.settleUntil) {
        held.push(() => fn(...args))
        return {} as NodeJS.Immediate
      }
      return original(fn, ...args)
    }) as typeof setImmediate)
    const session = 'deferred-held'
    try {
      expect((await call(warn, session, stuck(1, session))).headers[HEADER]).toBeUndefined()
      expect((await call(warn, session, stuck(2, session), { stream: true })).headers[HEADER]).toBeUndefined()
      const r = await call(warn, session, stuck(3, session))
      expect(r.headers[HEADER]).toBe(`loop: the same request tail 3 times in session ${session}`)
      expect(held).toHaveLength(3)
    } finally {
      spy.mockRestore()
    }
    for (const f of held) f()
    expect((await call(warn, session, stuck(4, session))).headers[HEADER]).toBe(`loop: the same request tail 4 times in session ${session}`)
    expect(await loopMarks(warn, session)).toEqual([expect.objectContaining({ repeats: 3 })])
  })

  it('a call refused by a budget carries the warning of its loop check (run before the refusal is written), and is not counted', async () => {
    const key = 'sk-ant-rated-aaaaaaaa-0001'
    const session = 'deferred-refused'
    for (const n of [1, 2]) expect((await call(warn, session, stuck(n, session), { key })).status).toBe(200)
    const r = await call(warn, session, stuck(3, session), { key })
    expect(r.status).toBe(429)
    expect(r.json().error.type).toBe('rate_limited')
    expect(r.headers[HEADER]).toBe(`loop: the same request tail 3 times in session ${session}`)
    expect(received.filter((s) => s === session)).toHaveLength(2)
    // The refused third call did nothing: the fourth is the tail's third turn.
    const fourth = await call(warn, session, stuck(4, session), { key })
    expect(fourth.headers[HEADER]).toBe(`loop: the same request tail 3 times in session ${session}`)
    expect(await loopMarks(warn, session)).toEqual([expect.objectContaining({ repeats: 3 })])
    await eventually(() => callsOf(warn, key).length === 4)
    expect(callsOf(warn, key).map((c) => c.status)).toEqual([200, 200, 429, 429])
  })

  it('WebSocket: each response.create is checked once, in order; the third identical tail is announced', async () => {
    const session = 'deferred-ws'
    const ws = new WebSocket(`${warn.url.replace('http', 'ws')}/v1/responses`, {
      headers: { authorization: 'Bearer sk-ws-deferred-0001', 'user-agent': 'codex_exec/0.169.0', 'x-burnrate-session': session },
    })
    const frames: string[] = []
    ws.on('message', (d) => frames.push(String(d)))
    await new Promise((resolve, reject) => {
      ws.on('open', resolve)
      ws.on('error', reject)
    })
    const input = (n: number) => [
      { role: 'user', content: 'fix the parser' },
      ...Array.from({ length: n }, () => [
        { role: 'assistant', content: 'npm test' },
        { role: 'user', content: 'Error: Cannot find module' },
      ]).flat(),
    ]
    for (const n of [1, 2, 3]) {
      ws.send(JSON.stringify({ type: 'response.create', model: 'gpt-4o-mini', input: input(n), stream: true }))
      await eventually(() => frames.length === 2 * n)
    }
    ws.close()
    expect(await loopMarks(warn, session)).toEqual([expect.objectContaining({ action: 'warn', repeats: 3 })])
  })
})

describe('block: the loop check still decides before anything goes upstream', () => {
  it('the third identical tail is refused and never reaches the upstream; each check ran before its dispatch', async () => {
    expect((await call(block, 'blocked-warmup', stuck(1, 'blocked-warmup'))).status).toBe(200)
    const order = recordOrder(block)
    const session = 'deferred-blocked'
    try {
      for (const n of [1, 2]) expect((await call(block, session, stuck(n, session))).status).toBe(200)
      const r = await call(block, session, stuck(3, session))
      expect(r.status).toBe(429)
      expect(r.json().error).toMatchObject({ type: 'loop_detected', repeats: 3 })
      expect(order.log).toEqual(['check', 'sent', 'check', 'sent', 'check', 'event'])
    } finally {
      order.stop()
    }
    expect(received.filter((s) => s === session)).toHaveLength(2)
  })
})
