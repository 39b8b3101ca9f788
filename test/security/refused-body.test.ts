import net from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { FAR_PAST, streamBody } from '../support/refused-stream'
import { type TestServer, startTestServer } from '../support/server'

/**
 * A request refused before its body is read (`POST /login` from another page, a login that is no
 * form or is too large, a 401 or 403 at the front of the server) has that body read and dropped
 * only so far: a client that goes on sending gigabytes has its connection closed, where Node's own
 * way (reading the rest, to keep the connection) took all of it. A small body is read whole, so
 * the client, which sends it before it reads, takes the answer (closing with it unread reset the
 * connection, and the client lost the answer).
 */
const TOKEN = 'refused-body-token-0123456789abcdef'
let s: TestServer
let port: number

beforeAll(async () => {
  s = await startTestServer({ dashboard: { token: TOKEN } })
  port = Number(new URL(s.url).port)
})
afterAll(async () => {
  await s.cleanup()
})

const stream = (head: string) => streamBody(port, head)

/** Sends a request with a body of `size` bytes, whole, then reads its answer's status line. */
function sendWhole(head: string, size: number): Promise<string> {
  return new Promise((resolve) => {
    const sock = net.connect({ port, host: '127.0.0.1' })
    let answer = ''
    sock.on('data', (d) => {
      answer += d.toString('latin1')
      if (answer.includes('\r\n\r\n')) {
        sock.destroy()
        resolve(answer.split('\r\n')[0])
      }
    })
    sock.on('error', (err) => resolve(`error: ${err.message}`))
    sock.on('close', () => resolve(answer.split('\r\n')[0] || 'closed without an answer'))
    sock.write(`${head}Content-Length: ${size}\r\n\r\n`)
    sock.write(Buffer.alloc(size, 'a'))
  })
}

const login = (origin: string | null, type = 'application/x-www-form-urlencoded') =>
  `POST /login HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n${origin === null ? '' : `Origin: ${origin}\r\nSec-Fetch-Site: same-origin\r\n`}Content-Type: ${type}\r\n`

describe('a refused request whose body keeps coming', () => {
  it('POST /login from another site (refused at the front, 403): the connection is closed, not read for ever', async () => {
    const r = await stream(login('http://evil.example'))
    expect(r.closed).toBe(true)
    expect(r.sent).toBeLessThan(FAR_PAST)
  })

  it('POST /login without an Origin, not a form, or past the form limit: closed too', async () => {
    for (const head of [login(null), login(s.url, 'text/plain'), login(s.url)]) {
      const r = await stream(head)
      expect(r.closed).toBe(true)
      expect(r.sent).toBeLessThan(FAR_PAST)
    }
  })

  it('a POST to the dashboard API without the token (401): closed too', async () => {
    const r = await stream(`POST /api/dashboard/budgets HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\n`)
    expect(r.closed).toBe(true)
    expect(r.sent).toBeLessThan(FAR_PAST)
  })
})

describe('a refused request with a small body, sent whole', () => {
  it('gets its answer, whatever the refusal', async () => {
    for (let round = 0; round < 5; round++) {
      expect(await sendWhole(login(null), 200_000)).toBe('HTTP/1.1 403 Forbidden')
      expect(await sendWhole(login(s.url, 'text/plain'), 200_000)).toBe('HTTP/1.1 415 Unsupported Media Type')
      expect(await sendWhole(login(s.url), 200_000)).toBe('HTTP/1.1 413 Payload Too Large')
      expect(await sendWhole(login('http://evil.example'), 200_000)).toBe('HTTP/1.1 403 Forbidden')
    }
  })
})
