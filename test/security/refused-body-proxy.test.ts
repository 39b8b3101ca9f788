import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { answerWhileSending, FAR_PAST, streamBody, twoOnOneConnection } from '../support/refused-stream'
import { serverOverMockUpstream, startTestServer, type TestServer } from '../support/server'

/**
 * A proxied call whose body is over the limit read whole (100 MB) is answered 413 before the rest
 * of its body is read (at once when its Content-Length says so): that rest is read and dropped
 * only so far (1 MiB), and the connection closed past it. Builds before this one read it to its
 * end, however long, to keep the connection: a client could stream gigabytes into the proxy.
 */
const env = serverOverMockUpstream()
const port = (): number => Number(new URL(env.t.url).port)
const chat = (): string =>
  `POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:${port()}\r\nContent-Type: application/json\r\nAuthorization: Bearer sk-refused-body-000000000001\r\n`

describe('a proxied call over the body limit', () => {
  it('by its Content-Length: answered 413 in the contract shape while the client still sends', async () => {
    const r = await answerWhileSending(port(), chat())
    expect(r.status).toBe('HTTP/1.1 413 Payload Too Large')
    expect(r.body.error.type).toBe('payload_too_large')
  })

  it('by its Content-Length, the body still coming: the connection is closed, not read for ever', async () => {
    const r = await streamBody(port(), chat())
    expect(r.closed).toBe(true)
    expect(r.sent).toBeLessThan(FAR_PAST)
  })

  it('chunked, past the limit as it comes: the connection is closed soon after', async () => {
    const r = await streamBody(port(), chat(), true)
    expect(r.closed).toBe(true)
    expect(r.sent).toBeLessThan(FAR_PAST)
  })

  it('a call within the limit still goes through', async () => {
    const res = await fetch(`${env.t.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer sk-refused-body-000000000001' },
      body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }),
    })
    expect(res.status).toBe(200)
    await res.arrayBuffer()
  })
})

/**
 * A proxied call refused on its headers, before its body is read (TRACE: 405; a provider turned
 * off in the config: 404), has its body read and dropped only so far too.
 */
describe('a proxied call refused before its body is read', () => {
  let off: TestServer
  beforeAll(async () => {
    off = await startTestServer({ providers: { openai: { enabled: false } } }, env.upstream.url)
  })
  afterAll(async () => {
    await off?.cleanup()
  })
  const offPort = (): number => Number(new URL(off.url).port)
  const offChat = (): string => `POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:${offPort()}\r\nContent-Type: application/json\r\n`
  const trace = (): string => `TRACE /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:${port()}\r\nContent-Type: application/json\r\n`

  it('TRACE: answered 405 in the contract shape, and the connection closed as the body goes on', async () => {
    const r = await answerWhileSending(port(), trace())
    expect(r.status).toBe('HTTP/1.1 405 Method Not Allowed')
    expect(r.body.error.type).toBe('method_not_allowed')
    const streamed = await streamBody(port(), trace())
    expect(streamed.closed).toBe(true)
    expect(streamed.sent).toBeLessThan(FAR_PAST)
  })

  it('a provider turned off: answered 404 in the contract shape, and the connection closed as the body goes on', async () => {
    const r = await answerWhileSending(offPort(), offChat())
    expect(r.status).toBe('HTTP/1.1 404 Not Found')
    expect(r.body.error.type).toBe('not_found')
    const streamed = await streamBody(offPort(), offChat(), true)
    expect(streamed.closed).toBe(true)
    expect(streamed.sent).toBeLessThan(FAR_PAST)
  })

  it('a small body sent whole: answered, and the connection stays usable', async () => {
    expect(await twoOnOneConnection(offPort(), offChat(), 200_000)).toEqual(['HTTP/1.1 404 Not Found', 'HTTP/1.1 404 Not Found'])
  })
})
