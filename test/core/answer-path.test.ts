import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { performance } from 'node:perf_hooks'
import { deadlines } from '../../src/main/proxy/call/deadlines'
import { startHttpResponse } from '../../src/main/proxy/call/response'
import { ClientHeaders } from '../../src/main/proxy/headers'
import { type CallState, type HttpCall, newCallState } from '../../src/main/proxy/call/state'
import { FEATURES } from '../../src/main/server/server'
import { fixture } from '../support/fixtures'
import { eventually, postJson } from '../support/http'
import { type TestServer, startTestServer } from '../support/server'

/**
 * What runs between the upstream's answer and the client's last byte: the upstream answer's
 * headers observer (the plans' meters) runs after the answer has been handed to the client, and
 * still sees every answer, once, with its status and headers.
 */
describe('the answer path: nothing advisory before the client has the answer', () => {
  const body = fixture('openai-chat/chat-nonstream-cached.json')
  let upstream: http.Server
  let t: TestServer
  const seen: { ended: boolean; headersSent: boolean; status: number; requestId: unknown; cookie: unknown }[] = []

  beforeAll(async () => {
    // Headers and body in one write (Node sends them together when end() carries the body), so the
    // proxy reads the whole answer at once, as it does for nearly every non-streaming answer.
    upstream = http.createServer((req, res) => {
      req.resume()
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'application/json', 'x-request-id': 'req_answer_path', 'set-cookie': 'a=1' })
        res.end(body)
      })
    })
    await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r))
    const url = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`
    const watch = (ctx: Parameters<(typeof FEATURES)[number]>[0]) => {
      ctx.observeHeaders((s: CallState, status, headers) => {
        const res = (s as CallState & { res: http.ServerResponse }).res
        seen.push({ ended: res.writableEnded, headersSent: res.headersSent, status, requestId: headers['x-request-id'], cookie: headers['set-cookie'] })
      })
    }
    t = await startTestServer({}, url, undefined, { create: { features: [...FEATURES, watch] } })
  })
  afterAll(async () => {
    await t.cleanup()
    upstream.closeAllConnections()
    await new Promise<void>((r) => upstream.close(() => r()))
  })

  it('the headers observer runs once the answer has been written to the client, with the upstream headers as they came', async () => {
    for (let i = 0; i < 3; i++) {
      const r = await postJson(`${t.url}/v1/chat/completions`, { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }, {
        authorization: 'Bearer sk-answer-path-0000000000',
      })
      expect(r.status).toBe(200)
      expect(r.text).toBe(body.toString())
      // Cookies never reach the client (headers.ts); the observer still sees them.
      expect(r.headers['set-cookie']).toBeUndefined()
      expect(r.headers['x-request-id']).toBe('req_answer_path')
    }
    await eventually(() => expect(seen).toHaveLength(3))
    for (const o of seen) expect(o).toEqual({ ended: true, headersSent: true, status: 200, requestId: 'req_answer_path', cookie: ['a=1'] })
  })
})

describe('a stream is metered after each chunk has left, and every chunk once', () => {
  // Anthropic's recorded stream, one chunk per event (as the bench and real streams send them).
  const chunks = fixture('anthropic/messages-stream-tool-use.sse')
    .toString()
    .split(/(?<=\n\n)/)
    .map((c) => Buffer.from(c))

  /** A real server answering one stream through startHttpResponse, its meter a spy on what the socket still held. */
  async function streamThrough(after: (s: HttpCall, send: (c: Buffer) => boolean, seen: { name: string; unsent: number }[]) => void) {
    const seen: { name: string; unsent: number }[] = []
    let call: HttpCall | null = null
    const server = http.createServer((req, res) => {
      const provider = {
        name: 'spy',
        meter: () => ({
          event: (name: string) => seen.push({ name, unsent: res.socket?.writableLength ?? -1 }),
          json: () => {},
          result: () => ({ usage: null }),
        }),
      }
      const ctx = { provider, shape: { model: 'm', endpoint: 'messages', billable: true } }
      const s: HttpCall = { ...newCallState({} as any, ctx as any, { method: 'POST', path: '/', query: '', headers: req.headers, body: undefined }, performance.now()), res }
      call = s
      const ctype = { 'content-type': 'text/event-stream' }
      const client = new ClientHeaders()
      client.set('content-type', 'text/event-stream')
      const send = startHttpResponse(s, 200, ctype, client, () => {}, 60_000, () => {})
      after(s, send, seen)
    })
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
    const port = (server.address() as AddressInfo).port
    const body = await new Promise<string>((resolve, reject) => {
      http
        .get({ host: '127.0.0.1', port, agent: false }, (res) => {
          let text = ''
          res.setEncoding('latin1')
          res.on('data', (d) => (text += d))
          res.on('end', () => resolve(text))
        })
        .on('error', reject)
    })
    server.close()
    for (const t of call!.timers) deadlines.cancel(t)
    return { seen, body }
  }

  it('each chunk is in the kernel (nothing of it left in the socket) before its events are parsed', async () => {
    const { seen, body } = await streamThrough((s, send) => {
      let i = 0
      const next = () => {
        if (i === chunks.length) {
          s.res.end()
          return
        }
        send(chunks[i++])
        setImmediate(next)
      }
      next()
    })
    expect(body).toBe(Buffer.concat(chunks).toString('latin1'))
    expect(seen.length).toBe(chunks.length)
    expect(seen.map((e) => e.unsent)).toEqual(chunks.map(() => 0))
  })

  it('chunks of one read are metered in order, once, and the recorder meters what is still pending first', async () => {
    const { seen } = await streamThrough((s, send, seen) => {
      for (const c of chunks.slice(0, 5)) send(c)
      // What finish() does before it reads the meter: nothing written is left unmetered.
      s.drainTap?.()
      const now = seen.length
      process.nextTick(() => {
        // The scheduled tick finds nothing left: no chunk metered twice.
        expect(seen.length).toBe(now)
        for (const c of chunks.slice(5)) send(c)
        setImmediate(() => s.res.end())
      })
    })
    const names = chunks.map((c) => /^event: (\S+)/.exec(c.toString())?.[1])
    expect(seen.map((e) => e.name)).toEqual(names)
  })
})
