import http from 'node:http'
import net, { type AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { eventually } from '../support/http'
import { ledgerRows } from '../support/ledger-rows'
import { type TestServer, startTestServer } from '../support/server'

/**
 * An upload the provider answers before it has taken it (a 413 for a file too large, a 401 for a
 * key it refuses) and then closes the connection on: its kernel resets the connection as more of
 * the body comes, and the answer is on Burnrate's side before the reset. The client gets that
 * answer, and the call is recorded with it. Builds before this one answered 502
 * upstream_unreachable (undici failed the request on the body's write, EPIPE, with the answer
 * unread), and an SDK sent the upload again.
 */
const KIB = 1024
/** What the upload declares: more than the upstream ever reads. */
const DECLARED = 64 * 1024 * KIB
/** What the upstream reads of a body before it answers. */
const READ_FIRST = 64 * KIB

let upstream: http.Server
let t: TestServer
/** The bytes of each body the upstream read before it answered. */
const read: number[] = []

/** Answers 413 (or `x-test-status`) with Connection: close once it has read READ_FIRST bytes of the body. */
function answerEarly(req: http.IncomingMessage, res: http.ServerResponse): void {
  const status = Number(req.headers['x-test-status'] ?? 413)
  let got = 0
  req.on('data', (c: Buffer) => {
    got += c.length
    if (got < READ_FIRST || res.headersSent) return
    read.push(got)
    req.pause()
    const body = JSON.stringify({ error: { message: status === 413 ? 'file too large' : 'invalid api key', type: 'invalid_request_error', code: String(status) } })
    res.writeHead(status, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)), connection: 'close' })
    res.end(body)
  })
}

beforeAll(async () => {
  upstream = http.createServer(answerEarly)
  await new Promise<void>((ok) => upstream.listen(0, '127.0.0.1', ok))
  t = await startTestServer({}, `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`)
})
afterAll(async () => {
  upstream.closeAllConnections()
  await t.cleanup()
  await new Promise((ok) => upstream.close(ok))
})

/**
 * Uploads a body of DECLARED bytes to Burnrate, 64 KiB at a time as the connection takes them,
 * until an answer begins (as curl does: it stops sending then); the answer's status line and body.
 */
function upload(headers: Record<string, string>): Promise<{ status: string; body: string }> {
  return new Promise((resolve, reject) => {
    const port = Number(new URL(t.url).port)
    const sock = net.connect({ port, host: '127.0.0.1' })
    let answer = ''
    let answered = false
    const whole = (): boolean => {
      const end = answer.indexOf('\r\n\r\n')
      if (end < 0) return false
      const len = /\r\ncontent-length: *(\d+)/i.exec(answer.slice(0, end))
      return !!len && answer.length >= end + 4 + Number(len[1])
    }
    const done = (): void => {
      sock.destroy()
      const end = answer.indexOf('\r\n\r\n')
      resolve({ status: answer.split('\r\n')[0], body: end < 0 ? '' : answer.slice(end + 4) })
    }
    sock.on('data', (d: Buffer) => {
      answered = true
      answer += d.toString('latin1')
      if (whole()) done()
    })
    sock.on('error', (err) => (answered ? done() : reject(err)))
    sock.on('close', () => (answer ? done() : reject(new Error('closed with no answer'))))
    const head = Object.entries({ ...headers, 'content-type': 'application/octet-stream', 'content-length': String(DECLARED) })
      .map(([k, v]) => `${k}: ${v}\r\n`)
      .join('')
    sock.write(`POST /v1/files HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n${head}\r\n`)
    const chunk = Buffer.alloc(64 * KIB, 'a')
    let sent = 0
    const send = (): void => {
      while (!answered && sent < DECLARED && !sock.destroyed) {
        sent += chunk.length
        if (!sock.write(chunk)) {
          sock.once('drain', send)
          return
        }
      }
    }
    send()
  })
}

describe('an upload the provider answers early and then closes its connection on', () => {
  for (const [status, line] of [
    [413, 'HTTP/1.1 413 Payload Too Large'],
    [401, 'HTTP/1.1 401 Unauthorized'],
  ] as const) {
    it(`gets the provider's ${status}, not a 502, and is recorded ${status}`, async () => {
      const before = ledgerRows(t.dbFile).length
      const sent = read.length
      // A few times over: the reset reaches Burnrate before it reads the answer on nearly every one.
      for (let i = 0; i < 4; i++) {
        const r = await upload({ authorization: 'Bearer sk-early-answer-0001', 'x-test-status': String(status) })
        expect(r.status).toBe(line)
        expect(JSON.parse(r.body).error.code).toBe(String(status))
      }
      // Each went upstream once.
      expect(read.length - sent).toBe(4)
      const rows = await eventually(() => {
        const r = ledgerRows(t.dbFile)
        return r.length === before + 4 ? r.slice(before) : undefined
      })
      for (const row of rows as any[]) expect(row).toMatchObject({ provider: 'openai', endpoint: 'other', status, error: null, cost_usd: 0 })
    })
  }
})
