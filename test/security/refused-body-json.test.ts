import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ADMIN_CONFIG, TOKEN } from '../admin/support'
import { answerWhileSending, FAR_PAST, streamBody, twoOnOneConnection } from '../support/refused-stream'
import { type TestServer, startTestServer } from '../support/server'

/**
 * A JSON body over a route's limit (the admin API's 64 KiB, ingest's 8 MB) is answered 413 at
 * once when its Content-Length says so, its body then read and dropped only so far (1 MiB) and the
 * connection closed past that; one that is chunked is answered 413 once past the limit (compressed:
 * 1 MiB past it) and has its connection closed once 1 MiB past the limit has come, after the answer.
 * Builds before this one read such a body to its end before answering (express.json does, to keep
 * the connection), however long: a client could stream gigabytes into the server, and one that
 * waited for the answer before sending more never got it; then, chunked, its connection was closed
 * 1 MiB past the limit with no answer at all.
 */
const ALICE = 'team-token-alice-refused-body-0001'
let s: TestServer
let port: number

beforeAll(async () => {
  s = await startTestServer({ ...ADMIN_CONFIG, timezone: 'UTC', team: { members: [{ name: 'alice', token: ALICE }] } })
  port = Number(new URL(s.url).port)
})
afterAll(async () => {
  await s.cleanup()
})

const rules = (): string =>
  `POST /api/admin/budgets/rules HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAuthorization: Bearer ${TOKEN}\r\nContent-Type: application/json\r\n`
const ingest = (): string => `POST /api/ingest HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAuthorization: Bearer ${ALICE}\r\nContent-Type: application/json\r\n`

describe.each([
  ['the admin API', rules, 64 * 1024],
  ['ingest', ingest, 8 * 1024 * 1024],
])('a JSON body over the limit: %s', (_name, head, limit) => {
  it('by its Content-Length: answered 413 in the contract shape while the client still sends', async () => {
    const r = await answerWhileSending(port, head())
    expect(r.status).toBe('HTTP/1.1 413 Payload Too Large')
    expect(r.body.error.type).toBe('payload_too_large')
  })

  it('by its Content-Length, the body still coming: the connection is closed, not read for ever', async () => {
    const r = await streamBody(port, head())
    expect(r.closed).toBe(true)
    expect(r.sent).toBeLessThan(FAR_PAST)
  })

  it('chunked, past the limit as it comes: answered 413 in the contract shape, and the connection closed soon after', async () => {
    const r = await streamBody(port, head(), true)
    expect(r.closed).toBe(true)
    expect(r.sent).toBeLessThan(FAR_PAST)
    expect(r.status).toBe('HTTP/1.1 413 Payload Too Large')
  })

  it('chunked, past the limit: answered 413 while the client still sends', async () => {
    const r = await answerWhileSending(port, head(), limit + 64 * 1024, true)
    expect(r.status).toBe('HTTP/1.1 413 Payload Too Large')
    expect(r.body.error.type).toBe('payload_too_large')
  })

  it('chunked and compressed, past the limit as it comes: answered in the contract shape before the connection is closed', async () => {
    const r = await streamBody(port, `${head()}Content-Encoding: gzip\r\n`, true)
    expect(r.closed).toBe(true)
    expect(r.sent).toBeLessThan(FAR_PAST)
    expect(r.status).toBe('HTTP/1.1 413 Payload Too Large')
  })
})

describe('a JSON body over the admin API limit, within the bound, sent whole', () => {
  it('is answered 413, and the connection stays usable', async () => {
    expect(await twoOnOneConnection(port, rules(), 200_000)).toEqual(['HTTP/1.1 413 Payload Too Large', 'HTTP/1.1 413 Payload Too Large'])
  })
})
