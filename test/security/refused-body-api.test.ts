import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { answerWhileSending, FAR_PAST, streamBody, twoOnOneConnection } from '../support/refused-stream'
import { type TestServer, startTestServer } from '../support/server'

/**
 * A request the API app answers without reading its body (a POST to no route: 404) has that body
 * read and dropped only so far (1 MiB), and its connection closed past that, as a refusal at the
 * front of the server has (test/security/refused-body.test.ts). Builds before this one read it to
 * its end, however long: a client could stream gigabytes into the server. A small body is read
 * whole, and the connection stays usable.
 */
let s: TestServer
let port: number

beforeAll(async () => {
  s = await startTestServer({})
  port = Number(new URL(s.url).port)
})
afterAll(async () => {
  await s.cleanup()
})

const nothing = (): string => `POST /api/nothing HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\n`

describe('a POST the API app has no route for (404)', () => {
  it('is answered in the contract shape while the client still sends', async () => {
    const r = await answerWhileSending(port, nothing())
    expect(r.status).toBe('HTTP/1.1 404 Not Found')
    expect(r.body.error.type).toBe('not_found')
  })

  it('its body still coming: the connection is closed, not read for ever', async () => {
    const r = await streamBody(port, nothing())
    expect(r.closed).toBe(true)
    expect(r.sent).toBeLessThan(FAR_PAST)
  })

  it('chunked: closed too', async () => {
    const r = await streamBody(port, nothing(), true)
    expect(r.closed).toBe(true)
    expect(r.sent).toBeLessThan(FAR_PAST)
  })

  it('a small body sent whole: answered, and the connection stays usable', async () => {
    expect(await twoOnOneConnection(port, nothing(), 200_000)).toEqual(['HTTP/1.1 404 Not Found', 'HTTP/1.1 404 Not Found'])
  })
})
