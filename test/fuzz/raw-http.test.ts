import net from 'node:net'
import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { request } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'

/** Requests that are not valid HTTP at all: a JSON 400 (never Node's bare one), never a crash. */

let upstream: MockUpstream
let t: TestServer
let port: number

beforeAll(async () => {
  upstream = await startMockUpstream()
  t = await startTestServer({ admin: { enabled: true, token: 'raw-fuzz-token-0123456789' } }, upstream.url)
  port = Number(new URL(t.url).port)
})
afterAll(async () => {
  await t.cleanup()
  await upstream.close()
})

/** Writes raw bytes, and returns everything the server sent back until it closed (or 3 s passed). */
function raw(bytes: Buffer | string): Promise<string> {
  return new Promise((resolve) => {
    const parts: Buffer[] = []
    const s = net.connect(port, '127.0.0.1', () => s.end(bytes))
    const done = () => resolve(Buffer.concat(parts).toString('latin1'))
    s.on('data', (d) => parts.push(d))
    s.on('close', done)
    s.on('error', () => {})
    s.setTimeout(3000, () => s.destroy())
  })
}

function statusOf(response: string): number {
  const m = /^HTTP\/1\.1 (\d{3}) /.exec(response)
  return m ? Number(m[1]) : 0
}

function expectJson400(response: string): void {
  expect(statusOf(response)).toBe(400)
  const [head, body] = response.split('\r\n\r\n')
  expect(head.toLowerCase()).toContain('content-type: application/json')
  const b = JSON.parse(body)
  expect(b.error.type).toBe('invalid_request')
  expect(b.error.message.length).toBeGreaterThan(10)
}

const H = () => `Host: 127.0.0.1:${port}\r\n`

describe('malformed HTTP', () => {
  const CASES: [string, () => string][] = [
    ['headers over 16 KiB', () => `GET /api/health HTTP/1.1\r\n${H()}X-Big: ${'a'.repeat(20_000)}\r\n\r\n`],
    ['a control character in a header value', () => `GET /api/health HTTP/1.1\r\n${H()}X-Bad: a\u0001b\r\n\r\n`],
    ['a space in a header name', () => `GET /api/health HTTP/1.1\r\n${H()}Bad Name: x\r\n\r\n`],
    ['a Content-Length that is not a number', () => `POST /api/admin/budgets/rules HTTP/1.1\r\n${H()}Content-Length: abc\r\n\r\n{}`],
    ['Content-Length and Transfer-Encoding together', () => `POST /v1/chat/completions HTTP/1.1\r\n${H()}Content-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n`],
    ['a malformed chunk size', () => `POST /v1/chat/completions HTTP/1.1\r\n${H()}Transfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n`],
    ['an invalid method', () => `G@T /api/health HTTP/1.1\r\n${H()}\r\n`],
    ['a bad HTTP version', () => `GET /api/health HTTP/7.3\r\n${H()}\r\n`],
    ['garbage', () => '\u0000\u00ff\u0013garbage\r\n\r\n'],
    ['two Content-Length values', () => `POST /api/admin/budgets/rules HTTP/1.1\r\n${H()}Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}`],
  ]
  for (const [what, make] of CASES) {
    it(`${what}: a JSON 400`, async () => {
      expectJson400(await raw(make()))
    })
  }

  it('a request without Host (HTTP/1.1 or 1.0): a JSON 400', async () => {
    expectJson400(await raw('GET /api/health HTTP/1.1\r\n\r\n'))
    expectJson400(await raw('GET /api/health HTTP/1.0\r\n\r\n'))
  })

  it('random bytes after a valid start: never a 5xx, never a crash', async () => {
    const starts = ['', 'GET / HTTP/1.1\r\n', `POST /api/admin/budgets/rules HTTP/1.1\r\n${H()}`, `GET /api/dashboard/summary HTTP/1.1\r\n${H()}`, `POST /v1/messages HTTP/1.1\r\n${H()}Content-Length: 5\r\n`]
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...starts), fc.uint8Array({ maxLength: 400 }), fc.boolean(), async (start, bytes, terminate) => {
        const r = await raw(Buffer.concat([Buffer.from(start, 'latin1'), Buffer.from(bytes), Buffer.from(terminate ? '\r\n\r\n' : '')]))
        const status = statusOf(r)
        if (r.length > 0) {
          expect(status, r.slice(0, 200)).toBeGreaterThanOrEqual(200)
          expect(status, r.slice(0, 200)).toBeLessThan(500)
        }
      }),
      { numRuns: 400, seed: 20261121 },
    )
    expect((await request(`${t.url}/api/health`)).status).toBe(200)
  }, 120_000)
})
