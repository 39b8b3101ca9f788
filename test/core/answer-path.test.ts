import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { CallState } from '../../src/main/proxy/call/state'
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
