import http from 'node:http'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { eventually } from '../support/http'
import { ledgerRows } from '../support/ledger-rows'
import { type RawUpstream, startRawUpstream } from '../support/raw-upstream'
import { type TestServer, startTestServer } from '../support/server'

/**
 * An upstream answer whose headers pass undici's default limit (16 KiB: a gateway's long policy
 * or cookie headers): the upstream answered, and billed, the call, so it goes to the client and
 * is recorded with its usage, not answered 502 "Could not reach" (which the SDKs send again).
 */

const ANSWER = JSON.stringify({
  id: 'chatcmpl-big-headers',
  object: 'chat.completion',
  model: 'gpt-4o-mini',
  choices: [{ index: 0, message: { role: 'assistant', content: 'hi' }, finish_reason: 'stop' }],
  usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
})
const BIG = 'p'.repeat(40 * 1024)
/** The policy header the upstream sends: BIG, or one past what Burnrate takes. */
let policy = BIG

let upstream: RawUpstream
let t: TestServer

beforeAll(async () => {
  upstream = await startRawUpstream((sock) => {
    sock.write(`HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nx-gateway-policy: ${policy}\r\ncontent-length: ${ANSWER.length}\r\n\r\n${ANSWER}`)
  })
  t = await startTestServer({}, upstream.url)
})

afterAll(async () => {
  await t.cleanup()
  await upstream.close()
})

/** A POST whose answer may carry large headers (a client that takes them: Codex's does). */
function post(url: string, body: unknown): Promise<{ status: number; headers: http.IncomingHttpHeaders; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: 'POST', headers: { 'content-type': 'application/json' }, agent: false, maxHeaderSize: 1024 * 1024 }, (res) => {
      let text = ''
      res.on('data', (c) => (text += c))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text }))
      res.on('error', reject)
    })
    req.on('error', reject)
    req.end(JSON.stringify(body))
  })
}

describe('an upstream answer with headers past 16 KiB', () => {
  it('goes to the client as it came, and its usage is recorded', async () => {
    const r = await post(`${t.url}/v1/chat/completions`, { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] })
    expect(r.status, r.text).toBe(200)
    expect(r.headers['x-gateway-policy']).toBe(BIG)
    expect(JSON.parse(r.text).usage.completion_tokens).toBe(5)
    const row = await eventually(() => ledgerRows(t.dbFile)[0])
    expect(row).toMatchObject({ status: 200, error: null, input_tokens: 10, output_tokens: 5 })
  })

  it('past 256 KiB: a 502 that says the provider answered with too large headers, not that it could not be reached', async () => {
    policy = 'p'.repeat(300 * 1024)
    try {
      const r = await post(`${t.url}/v1/chat/completions`, { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] })
      expect(r.status).toBe(502)
      expect(JSON.parse(r.text).error.message).toMatch(/^openai \(127\.0\.0\.1:\d+\) its answer's headers are larger than Burnrate takes \(256 KiB\)/)
      const row = await eventually(() => ledgerRows(t.dbFile)[1])
      expect(row).toMatchObject({ status: 502, error: 'upstream_unreachable: HEADERS_TOO_LARGE' })
    } finally {
      policy = BIG
    }
  })
})
