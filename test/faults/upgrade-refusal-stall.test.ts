import type { IncomingMessage } from 'node:http'
import type net from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type WebSocket from 'ws'
import { eventually } from '../support/http'
import { type RawUpstream, startRawUpstream } from '../support/raw-upstream'
import { responsesUpgrade } from '../support/ws-upgrade'
import { startLoggedServer } from '../network/support'

/**
 * An upstream that refuses a WebSocket upgrade (401, 429, 503...) and then never ends its answer's
 * body (a gateway that stalls, a body announced longer than it is, a chunked one never closed):
 * the client is told the refusal when it comes (its status and headers, and the body as it
 * comes), not only once the body ends, which held the agent until the whole upgrade's time limit
 * (connect + first byte, over ten minutes by default). The body is cut once it goes quiet for
 * upstream.idle_timeout_ms, as any other answer's, and the upstream's connection closed.
 */

let upstream: RawUpstream
let framing: 'length' | 'chunked' = 'length'
const held = new Set<net.Socket>()

beforeAll(async () => {
  upstream = await startRawUpstream((sock) => {
    held.add(sock)
    sock.on('close', () => held.delete(sock))
    const body = '{"error":{"message":"invalid api key","type":"invalid_request_error"'
    if (framing === 'length') {
      sock.write(`HTTP/1.1 401 Unauthorized\r\ncontent-type: application/json\r\nx-request-id: req-refused\r\ncontent-length: ${body.length + 100}\r\n\r\n${body}`)
    } else {
      sock.write(`HTTP/1.1 401 Unauthorized\r\ncontent-type: application/json\r\nx-request-id: req-refused\r\ntransfer-encoding: chunked\r\n\r\n${body.length.toString(16)}\r\n${body}\r\n`)
    }
  })
})
afterAll(async () => {
  await upstream.close()
})

/** The client's upgrade, until it is answered (its status, headers and the body's first bytes), or 20 s pass. */
function refusal(url: string): Promise<{ status?: number; res?: IncomingMessage; text?: string; gaveUp?: boolean; ws?: WebSocket }> {
  return new Promise((resolve) => {
    const { ws, done } = responsesUpgrade(url, 20_000, () => resolve({ gaveUp: true }))
    ws.on('unexpected-response', (_req, res) => {
      let text = ''
      res.on('data', (c) => {
        text += c
        if (text.includes('invalid api key')) {
          done()
          resolve({ status: res.statusCode, res, text, ws })
        }
      })
    })
  })
}

describe('an upgrade the upstream refuses with a body that never ends', () => {
  for (const f of ['length', 'chunked'] as const) {
    it(`is answered with the refusal at once, then cut after idle_timeout_ms (${f === 'length' ? 'a Content-Length body cut short' : 'a chunked body never closed'})`, async () => {
      framing = f
      // Limits far past the test's patience but for the body's silence.
      const s = await startLoggedServer({
        upstream: { first_byte_timeout_ms: 60_000, idle_timeout_ms: 1000 },
        providers: { openai: { base_url: `${upstream.url}/v1` } },
      })
      try {
        const r = await refusal(s.url)
        expect(r.gaveUp).toBeUndefined()
        expect(r.status).toBe(401)
        expect(r.res!.headers['x-request-id']).toBe('req-refused')
        expect(r.text).toContain('"invalid api key"')
        // The body goes quiet: the client's answer is cut, and the upstream's connection closed.
        await new Promise<void>((resolve) => {
          if (r.res!.socket?.destroyed) resolve()
          else r.res!.socket?.once('close', () => resolve())
        })
        expect(r.res!.complete).toBe(false)
        await eventually(() => held.size === 0)
      } finally {
        await s.stop()
      }
    }, 60_000)
  }

  it('closes the upstream connection when the client hangs up first', async () => {
    framing = 'length'
    const s = await startLoggedServer({ providers: { openai: { base_url: `${upstream.url}/v1` } } })
    try {
      const r = await refusal(s.url)
      expect(r.status).toBe(401)
      r.res!.socket?.destroy()
      await eventually(() => held.size === 0)
    } finally {
      await s.stop()
    }
  }, 60_000)
})
