import { describe, expect, it, vi } from 'vitest'
import { answerWhileSending, FAR_PAST, streamBody } from '../support/refused-stream'
import { serversPerTest } from '../support/server'

/**
 * A proxied call whose body goes upstream as it comes (a file upload, a Message Batch), answered
 * before any of its body went anywhere (here: the price data could not be loaded, so it cannot be
 * metered; a budget's refusal: refused-body-streamed-budget.test.ts), gets its answer, and its body is read and dropped only so far
 * (1 MiB), the connection closed past that. Builds before this one left the body to Node, which
 * read it to its end to keep the connection, however long: a client could stream gigabytes into
 * the proxy.
 */
vi.mock('@pydantic/genai-prices', () => {
  throw new Error('corrupt price table')
})

const start = serversPerTest()

describe('a streamed upload when the price data cannot be loaded', () => {
  it('is answered 500 in the contract shape, and its connection closed as the body goes on', async () => {
    const upstream = await start.upstream()
    const t = await start.server({}, upstream.url, undefined, { create: { apiPreloadMs: false } })
    const port = Number(new URL(t.url).port)
    const head = `POST /v1/files HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: multipart/form-data; boundary=b0undary\r\nAuthorization: Bearer sk-refused-streamed-0001\r\n`
    const r = await answerWhileSending(port, head)
    expect(r.status).toBe('HTTP/1.1 500 Internal Server Error')
    expect(r.body.error.type).toBe('internal')
    expect(r.body.error.message).toMatch(/price data/)
    for (const chunked of [false, true]) {
      const streamed = await streamBody(port, head, chunked)
      expect(streamed.status).toBe('HTTP/1.1 500 Internal Server Error')
      expect(streamed.closed).toBe(true)
      expect(streamed.sent).toBeLessThan(FAR_PAST)
    }
    expect(upstream.requests).toHaveLength(0)
  })
})
