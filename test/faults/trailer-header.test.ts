import net from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { eventually } from '../support/http'
import { ledgerRows } from '../support/ledger-rows'
import { type RawUpstream, startRawUpstream } from '../support/raw-upstream'
import { type TestServer, startTestServer } from '../support/server'

/**
 * An upstream answer that announces trailers (`Trailer:`), to a client it cannot go to in chunks:
 * an HTTP/1.0 client, a HEAD request. Node refuses to write a `Trailer` header on an answer it
 * does not chunk (it throws), so the header goes only where the trailers can follow it; the
 * answer itself must still reach the client and its usage be recorded.
 */

const ANSWER = JSON.stringify({
  id: 'chatcmpl-trailer',
  object: 'chat.completion',
  model: 'gpt-4o-mini',
  choices: [{ index: 0, message: { role: 'assistant', content: 'hi' }, finish_reason: 'stop' }],
  usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
})

let upstream: RawUpstream
let t: TestServer

beforeAll(async () => {
  upstream = await startRawUpstream((sock, request) => {
    const head = request.startsWith('HEAD ')
    const h = 'HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\ntrailer: x-request-cost\r\n\r\n'
    sock.write(head ? h : `${h}${ANSWER.length.toString(16)}\r\n${ANSWER}\r\n0\r\nx-request-cost: 0.000004\r\n\r\n`)
  })
  t = await startTestServer({}, upstream.url)
})

afterAll(async () => {
  await t.cleanup()
  await upstream.close()
})

/** Sends `text` on a new connection to the server and returns all it answered, once it closes. */
function exchange(text: string): Promise<string> {
  return new Promise((resolve) => {
    const s = net.connect(Number(new URL(t.url).port), '127.0.0.1', () => s.write(text))
    let out = ''
    s.on('data', (d) => (out += d.toString('latin1')))
    s.on('close', () => resolve(out))
    s.on('error', () => {})
  })
}

const BODY = JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] })

describe('an upstream answer that announces trailers', () => {
  it('goes to an HTTP/1.0 client whole (without them), and its usage is recorded', async () => {
    const before = ledgerRows(t.dbFile).length
    const host = new URL(t.url).host
    const out = await exchange(`POST /v1/chat/completions HTTP/1.0\r\nhost: ${host}\r\ncontent-type: application/json\r\ncontent-length: ${BODY.length}\r\n\r\n${BODY}`)
    expect(out).toMatch(/^HTTP\/1\.1 200 /)
    expect(out.endsWith(ANSWER)).toBe(true)
    expect(out.toLowerCase()).not.toContain('trailer:')
    const row = await eventually(() => ledgerRows(t.dbFile)[before])
    expect(row).toMatchObject({ status: 200, error: null, input_tokens: 10, output_tokens: 5, estimated: 0 })
    expect(row.cost_usd).toBeGreaterThan(0)
  })

  it('answers a HEAD request with its status', async () => {
    const host = new URL(t.url).host
    const out = await exchange(`HEAD /v1/models HTTP/1.1\r\nhost: ${host}\r\nconnection: close\r\n\r\n`)
    expect(out).toMatch(/^HTTP\/1\.1 200 /)
  })

  it('still goes to an HTTP/1.1 client in chunks, with its trailers', async () => {
    const host = new URL(t.url).host
    const out = await exchange(`POST /v1/chat/completions HTTP/1.1\r\nhost: ${host}\r\nconnection: close\r\ncontent-type: application/json\r\ncontent-length: ${BODY.length}\r\n\r\n${BODY}`)
    expect(out).toMatch(/^HTTP\/1\.1 200 /)
    expect(out.toLowerCase()).toContain('trailer: x-request-cost')
    expect(out).toContain('\r\n0\r\nx-request-cost: 0.000004\r\n\r\n')
  })
})
