import http from 'node:http'
import { afterEach, describe, expect, it } from 'vitest'
import { eventually } from '../support/http'
import { FAR_PAST, streamBody } from '../support/refused-stream'
import { serversPerTest } from '../support/server'
import { rows } from '../providers/ledger'

/**
 * A file upload streamed upstream whose exchange ends before its body has (the provider answers it
 * at once without reading it, or closes the connection) gets that answer, and the rest of its body
 * is read and dropped only so far (1 MiB), the connection closed past that once the answer has
 * gone. Builds before this one read the rest to its end, however long: a client could stream
 * gigabytes into the proxy.
 */
const start = serversPerTest()
const upstreams: http.Server[] = []
afterEach(async () => {
  for (const u of upstreams.splice(0)) {
    u.closeAllConnections()
    await new Promise((r) => u.close(r))
  }
})

/** An upstream that answers 413 as soon as a request's headers come, its body unread (nginx's client_max_body_size). */
async function answersAtOnce(close: boolean): Promise<string> {
  const u = http.createServer((_req, res) => {
    res.writeHead(413, { 'content-type': 'application/json', ...(close ? { connection: 'close' } : {}) })
    res.end('{"error":{"message":"file too large"}}')
  })
  upstreams.push(u)
  await new Promise<void>((r) => u.listen(0, '127.0.0.1', () => r()))
  return `http://127.0.0.1:${(u.address() as { port: number }).port}`
}

describe('a streamed upload the upstream answers before taking it whole', () => {
  // Closing its connection, the upstream resets it as the body comes on: its answer is read all the
  // same (builds before this one often answered 502: ../faults/upload-answered-early.test.ts).
  for (const close of [false, true]) {
    it(`${close ? 'and closes its connection' : 'keeping its connection'}: answered, and the client's connection closed as the body goes on`, async () => {
      const t = await start.server({}, await answersAtOnce(close))
      const port = Number(new URL(t.url).port)
      const head = `POST /v1/files HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: multipart/form-data; boundary=b0undary\r\nAuthorization: Bearer sk-streamed-early-0001\r\n`
      const r = await streamBody(port, head, true)
      expect(r.status).toBe('HTTP/1.1 413 Payload Too Large')
      expect(r.closed).toBe(true)
      expect(r.sent).toBeLessThan(FAR_PAST)
      // Recorded once.
      await eventually(() => rows(t).length === 1)
    })
  }
})
