import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import WebSocket from 'ws'
import { type TestServer, startTestServer } from '../support/server'
import { type WsUpstream, startWsUpstream } from '../support/ws-upstream'

/**
 * A page in the browser may open a WebSocket to 127.0.0.1 (browsers send no preflight for one): the
 * proxied sockets (Codex's Responses socket, Realtime, Gemini Live) and any other path are refused
 * by the same Host and cross-site checks as a request, before anything reaches the upstream.
 */
let up: WsUpstream
let t: TestServer
let accepted = 0

beforeAll(async () => {
  up = await startWsUpstream({ onConnection: () => accepted++ })
  t = await startTestServer({}, up.url)
})
afterAll(async () => {
  await t?.cleanup()
  await up?.close()
})

function attempt(path: string, headers: Record<string, string>): Promise<number> {
  return new Promise((resolve) => {
    const ws = new WebSocket(`${t.url.replace('http', 'ws')}${path}`, { headers })
    ws.on('unexpected-response', (_req, res) => {
      resolve(res.statusCode ?? 0)
      res.resume()
    })
    ws.on('open', () => {
      resolve(101)
      ws.close()
    })
    ws.on('error', () => resolve(-1))
  })
}

describe('a WebSocket from another web page', () => {
  it.each([
    ['/v1/responses', { authorization: 'Bearer sk-x-0001', origin: 'https://evil.example' }],
    ['/v1/realtime?model=gpt-realtime', { origin: 'http://evil.example', 'sec-websocket-protocol': 'realtime' }],
    ['/v1beta/models/gemini-2.0-flash-live:BidiGenerateContent?key=AIza-x', { origin: 'null' }],
    ['/v1/responses', { authorization: 'Bearer sk-x-0001', host: 'evil.example:80' }],
    ['/v1/responses', { authorization: 'Bearer sk-x-0001', 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'websocket' }],
    ['/api/dashboard/summary', { origin: 'https://evil.example' }],
  ])('%s %j is refused before the upstream sees it', async (path, headers) => {
    expect(await attempt(path, headers as Record<string, string>)).toBe(403)
    expect(accepted).toBe(0)
  })
})
