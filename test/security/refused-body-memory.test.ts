import http from 'node:http'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { FAR_PAST, streamBody, twoOnOneConnection } from '../support/refused-stream'
import { eventually, request } from '../support/http'
import { serverOverMockUpstream } from '../support/server'

/**
 * A proxied call refused because the request bodies held in memory are at server.max_buffered_body_mb
 * (503 with Retry-After) has its body read and dropped only so far (1 MiB), as every refusal: a small
 * body sent whole leaves its connection usable, a longer one has it closed past the bound. Builds
 * before this one closed the connection as soon as the 503 was written, the body unread: the
 * client's connection was reset while it still sent (a reset that, on some systems, takes the
 * answer with it), and one that sent its next call on it lost that.
 */
const env = serverOverMockUpstream({ server: { max_buffered_body_mb: 1 } })
const port = (): number => Number(new URL(env.t.url).port)
const chat = (): string =>
  `POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:${port()}\r\nContent-Type: application/json\r\nAuthorization: Bearer sk-refused-memory-000000001\r\n`

/** A slow upload that has announced 700 KB and sent 1 KB: its share of the memory is held while it arrives. */
let holder: http.ClientRequest
beforeAll(async () => {
  holder = http.request(`${env.t.url}/v1/chat/completions`, {
    method: 'POST',
    agent: false,
    headers: { 'content-type': 'application/json', authorization: 'Bearer sk-refused-memory-000000001', 'content-length': '700000' },
  })
  holder.on('error', () => {})
  holder.write(' '.repeat(1000))
  // Held once a body that fits on its own no longer does.
  await eventually(async () => {
    const r = await request(`${env.t.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer sk-refused-memory-000000001' },
      body: ' '.repeat(400_000),
    })
    return r.status === 503
  })
})
afterAll(() => {
  holder.destroy()
})

describe('a proxied call the memory for request bodies has no room for', () => {
  it('sent whole, within the bound: answered 503 in the contract shape, and the connection stays usable', async () => {
    const statuses = await twoOnOneConnection(port(), chat(), 400_000)
    expect(statuses).toEqual(['HTTP/1.1 503 Service Unavailable', 'HTTP/1.1 503 Service Unavailable'])
  })

  it('chunked, the body still coming: answered 503, and the connection closed, not read for ever', async () => {
    const r = await streamBody(port(), chat(), true)
    expect(r.status).toBe('HTTP/1.1 503 Service Unavailable')
    expect(r.closed).toBe(true)
    expect(r.sent).toBeLessThan(FAR_PAST)
  })
})
