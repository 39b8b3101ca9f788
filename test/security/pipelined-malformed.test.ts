import net from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fixture } from '../support/fixtures'
import { eventually } from '../support/http'
import { ledgerRows } from '../support/ledger-rows'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'

/**
 * A proxied call with bytes that are not HTTP pipelined behind it (one write): the call is answered
 * first, then the 400 for what could not be read, and the connection closed. Builds before this one
 * answered the 400 at once, in the call's place: the client read "400 invalid_request" as its call's
 * answer, while the call went on to the provider (billed) and was recorded as the client's abort.
 */
let upstream: MockUpstream
let t: TestServer
beforeAll(async () => {
  upstream = await startMockUpstream(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body: fixture('openai-chat/chat-nonstream-cached.json') }))
  t = await startTestServer({}, upstream.url)
})
afterAll(async () => {
  await t?.cleanup()
  await upstream?.close()
})

const CHAT = JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] })

/** Everything the server sends on one connection until it closes it. */
function oneWrite(text: string): Promise<string> {
  return new Promise((resolve) => {
    let got = ''
    const s = net.connect(Number(new URL(t.url).port), '127.0.0.1', () => s.write(text))
    s.on('data', (d) => (got += d.toString()))
    s.on('close', () => resolve(got))
    s.on('error', () => {})
  })
}

describe('bytes that are not HTTP pipelined behind a proxied call', () => {
  it('the call is answered first, then the 400, and recorded as answered', async () => {
    const port = new URL(t.url).port
    const got = await oneWrite(
      `POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\n` +
        `Authorization: Bearer sk-pipelined-bad-0001\r\nContent-Length: ${CHAT.length}\r\n\r\n${CHAT}` +
        'GARBAGE \x01\x02 nonsense\r\n\r\n',
    )
    expect(got).toMatch(/^HTTP\/1\.1 200 /)
    const second = got.indexOf('HTTP/1.1 400 ')
    expect(second).toBeGreaterThan(0)
    expect(JSON.parse(got.slice(got.indexOf('\r\n\r\n', second) + 4)).error.type).toBe('invalid_request')
    expect(upstream.requests).toHaveLength(1)
    const row = await eventually(() => ledgerRows(t.dbFile).find((r) => r.key_hint === 'sk-…0001'))
    expect(row.status).toBe(200)
    expect(row.cost_usd).toBeGreaterThan(0)
  })

  it('sent while a streamed answer is under way: the stream is not cut, the 400 comes after its end', async () => {
    const sse = fixture('openai-chat/chat-stream-with-usage.sse')
    let release = () => {}
    const released = new Promise<void>((r) => (release = r))
    const half = Math.floor(sse.length / 2)
    upstream.setResponder(() => ({ status: 200, headers: { 'content-type': 'text/event-stream' }, chunks: [sse.subarray(0, half), sse.subarray(half)], holdAfterChunks: 1, release: released }))
    const port = Number(new URL(t.url).port)
    const got = await new Promise<string>((resolve) => {
      let text = ''
      const s = net.connect(port, '127.0.0.1', () =>
        s.write(
          `POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\n` +
            `Authorization: Bearer sk-pipelined-bad-0002\r\nContent-Length: ${CHAT.length}\r\n\r\n${CHAT}`,
        ),
      )
      s.on('data', (d) => {
        const first = text === ''
        text += d.toString()
        // The answer has begun: now the bytes that are not HTTP, and once the server has found
        // them unreadable, the rest of the stream.
        if (first) {
          t.server.http.once('clientError', () => release())
          s.write('GARBAGE \x01\x02 nonsense\r\n\r\n')
        }
      })
      s.on('close', () => resolve(text))
      s.on('error', () => {})
    })
    expect(got).toMatch(/^HTTP\/1\.1 200 /)
    const second = got.indexOf('HTTP/1.1 400 ')
    expect(second).toBeGreaterThan(0)
    expect(got.slice(0, second)).toContain(sse.subarray(half).toString().trim().split('\n').pop())
    const row = await eventually(() => ledgerRows(t.dbFile).find((r) => r.key_hint === 'sk-…0002'))
    expect(row.status).toBe(200)
    expect(row.error).toBeFalsy()
  })
})
