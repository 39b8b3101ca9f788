import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import WebSocket from 'ws'
import { eventually, postJson } from '../support/http'
import { ledgerRows } from '../support/ledger-rows'
import { type RawUpstream, startRawUpstream } from '../support/raw-upstream'
import { type TestServer, startTestServer } from '../support/server'

/**
 * An upstream answer with both Transfer-Encoding and Content-Length (a gateway or proxy that
 * chunks an answer and keeps its length): HTTP/1.1 forbids it (RFC 9112 §6.1: a sign of request
 * smuggling or response splitting), and undici refuses to read it, with no way to have it read
 * by Transfer-Encoding alone. The provider answered, and may have billed, the call: the client
 * is told that, in words that name the cause (not "Could not reach", which sends an SDK to send
 * the call again as if it never arrived), and the ledger row names it too.
 */

const ANSWER = JSON.stringify({
  id: 'chatcmpl-te-cl',
  object: 'chat.completion',
  model: 'gpt-4o-mini',
  choices: [{ index: 0, message: { role: 'assistant', content: 'hi' }, finish_reason: 'stop' }],
  usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
})

let upstream: RawUpstream
let t: TestServer

beforeAll(async () => {
  upstream = await startRawUpstream((sock, request) => {
    const status = request.startsWith('GET') ? '401 Unauthorized' : '200 OK'
    sock.write(
      `HTTP/1.1 ${status}\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\ncontent-length: ${ANSWER.length}\r\n\r\n` +
        `${ANSWER.length.toString(16)}\r\n${ANSWER}\r\n0\r\n\r\n`,
    )
  })
  t = await startTestServer({}, upstream.url)
})

afterAll(async () => {
  await t.cleanup()
  await upstream.close()
})

describe('an upstream answer with both Transfer-Encoding and Content-Length', () => {
  it('is a 502 that says the provider answered with a response Burnrate does not read, and may have billed it', async () => {
    const r = await postJson(`${t.url}/v1/chat/completions`, { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] })
    expect(r.status).toBe(502)
    const message = r.json().error.message as string
    expect(message).not.toMatch(/Could not reach/)
    expect(message).toMatch(/^openai \(127\.0\.0\.1:\d+\) answered with a response that is not valid HTTP\/1\.1 \(Content-Length can't be present with Transfer-Encoding\)/)
    expect(message).toMatch(/may have been processed, and billed, there/)
    const row = await eventually(() => ledgerRows(t.dbFile)[0])
    expect(row).toMatchObject({ status: 502, error: 'upstream_unreachable: MALFORMED_ANSWER', cost_usd: 0 })
  })

  it('as the answer to a WebSocket upgrade: a 502 in the same words', async () => {
    const r = await new Promise<{ status?: number; body?: any }>((resolve, reject) => {
      const ws = new WebSocket(`${t.url.replace('http', 'ws')}/v1/responses`, { headers: { authorization: 'Bearer sk-test' } })
      ws.on('unexpected-response', (_req, res) => {
        let text = ''
        res.on('data', (c) => (text += c))
        res.on('end', () => resolve({ status: res.statusCode, body: JSON.parse(text) }))
      })
      ws.on('open', () => reject(new Error('opened')))
      ws.on('error', () => {})
    })
    expect(r.status).toBe(502)
    expect(r.body.error.message).not.toMatch(/Could not reach/)
    expect(r.body.error.message).toMatch(/answered with a response that is not valid HTTP\/1\.1/)
  })
})
