import { createHash, randomBytes } from 'node:crypto'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { eventually } from '../support/http'
import { ledgerRows } from '../support/ledger-rows'
import { BOUNDARY, multipartForm } from '../support/multipart'
import { type TestServer, startTestServer } from '../support/server'

/**
 * Request bodies streamed upstream as they come (src/main/proxy/call/request-stream.ts): what the
 * upstream gets, what is recorded, and what happens when either side stops part-way. The upstream
 * here reads bodies chunk by chunk; `x-test-cut: <bytes>` makes it drop the connection once it has
 * that many, `x-test-stall: <bytes>` makes it stop reading there (and never answer).
 */
interface Received {
  path: string
  bytes: number
  sha256: string
  ended: boolean
}

let upstream: http.Server
let t: TestServer
const received: Received[] = []
/** The requests the upstream stopped reading (x-test-stall). */
const stalled: http.IncomingMessage[] = []

beforeAll(async () => {
  upstream = http.createServer((req, res) => {
    const hash = createHash('sha256')
    const got: Received = { path: req.url ?? '', bytes: 0, sha256: '', ended: false }
    received.push(got)
    const cut = Number(req.headers['x-test-cut'] ?? 0)
    const stall = Number(req.headers['x-test-stall'] ?? 0)
    let stalledOnce = false
    req.on('data', (c: Buffer) => {
      got.bytes += c.length
      hash.update(c)
      if (cut && got.bytes >= cut) req.socket.destroy()
      if (stall && got.bytes >= stall && !stalledOnce) {
        stalledOnce = true
        stalled.push(req)
        req.pause()
      }
    })
    req.on('end', () => {
      got.ended = true
      got.sha256 = hash.digest('hex')
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end(JSON.stringify({ id: 'file-1', object: 'file', bytes: got.bytes }))
    })
  })
  await new Promise<void>((ok) => upstream.listen(0, '127.0.0.1', ok))
  // A second's wait for an answer: an upload taking longer is timed from its last byte, not its first.
  t = await startTestServer(
    { upstream: { first_byte_timeout_ms: 1000 }, budgets: { rules: [{ api_key_pattern: 'sk-capped-*', requests_per_minute: 1, action: 'block' }] } },
    `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`,
  )
})
afterAll(async () => {
  upstream.closeAllConnections()
  await t.cleanup()
  await new Promise((ok) => upstream.close(ok))
})
beforeEach(() => {
  received.length = 0
})

/**
 * Posts `body` in `pieces`, waiting `pauseMs` between them, or stopping (destroying the request)
 * after `abortAfter` pieces; `mayBreak`: the connection may close while the body is still being
 * sent (an answer given before it was all read), and the client may see that before the answer.
 */
function post(
  path: string,
  headers: Record<string, string>,
  body: Buffer,
  opts: { pieces?: number; pauseMs?: number; abortAfter?: number; mayBreak?: boolean } = {},
): Promise<{ status: number; text: string } | 'aborted'> {
  return new Promise((ok, fail) => {
    const req = http.request(`${t.url}${path}`, { method: 'POST', agent: false, headers: { ...headers, 'content-length': String(body.length) } }, (res) => {
      let text = ''
      res.setEncoding('utf8')
      res.on('data', (c) => (text += c))
      res.on('end', () => ok({ status: res.statusCode ?? 0, text }))
    })
    req.on('error', (err) => (opts.abortAfter !== undefined || opts.mayBreak ? ok('aborted') : fail(err)))
    const pieces = opts.pieces ?? 1
    const size = Math.ceil(body.length / pieces)
    let i = 0
    const next = (): void => {
      if (opts.abortAfter !== undefined && i === opts.abortAfter) {
        req.destroy()
        ok('aborted')
        return
      }
      const piece = body.subarray(i * size, (i + 1) * size)
      i++
      if (i >= pieces) {
        req.end(piece)
        return
      }
      req.write(piece)
      setTimeout(next, opts.pauseMs ?? 0)
    }
    next()
  })
}

/** Posts `body` whole through `agent` (a kept-alive connection). */
function postVia(agent: http.Agent, path: string, headers: Record<string, string>, body: Buffer): Promise<{ status: number; text: string }> {
  return new Promise((ok, fail) => {
    const req = http.request(`${t.url}${path}`, { method: 'POST', agent, headers: { ...headers, 'content-length': String(body.length) } }, (res) => {
      let text = ''
      res.setEncoding('utf8')
      res.on('data', (c) => (text += c))
      res.on('end', () => ok({ status: res.statusCode ?? 0, text }))
    })
    req.on('error', fail)
    req.end(body)
  })
}

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex')
const OPENAI = { authorization: 'Bearer sk-streamed-body-0000001' }

describe('a streamed request body', () => {
  it("is a form whose text fields come after its file (as the Node SDK sends it): they are recorded as a form read whole gives them", async () => {
    const form = multipartForm({ model: 'sora-2', prompt: 'a cat' }, randomBytes(300 * 1024), 'ref.png', 'image/png')
    const res = await post('/v1/videos', { ...OPENAI, 'content-type': `multipart/form-data; boundary=${BOUNDARY}` }, form, { pieces: 5 })
    expect(res).toMatchObject({ status: 200 })
    expect(received[0]).toMatchObject({ path: '/v1/videos', bytes: form.length, sha256: sha(form), ended: true })
    const row = await eventually(() => ledgerRows(t.dbFile, "endpoint = 'other' AND model = 'sora-2'")[0])
    expect(row).toMatchObject({ provider: 'openai', status: 200, cost_usd: 0 })
  })

  it("goes to Gemini's file upload byte for byte", async () => {
    const file = randomBytes(3 * 1024 * 1024)
    const res = await post(
      '/gemini/upload/v1beta/files?upload_id=u1&upload_protocol=resumable',
      { 'x-goog-api-key': 'AIza-streamed-body-0000001', 'x-goog-upload-command': 'upload, finalize', 'x-goog-upload-offset': '0', 'content-type': 'application/octet-stream' },
      file,
      { pieces: 3 },
    )
    expect(res).toMatchObject({ status: 200 })
    expect(received[0]).toMatchObject({ path: '/upload/v1beta/files?upload_id=u1&upload_protocol=resumable', bytes: file.length, sha256: sha(file) })
    await eventually(() => ledgerRows(t.dbFile, "provider = 'gemini' AND status = 200").length === 1)
  })

  it('sent slower than the answer may take (upstream.first_byte_timeout_ms) is not cut: the wait begins at its last byte', async () => {
    const file = randomBytes(512 * 1024)
    const res = await post('/v1/files', { ...OPENAI, 'content-type': 'application/octet-stream' }, file, { pieces: 8, pauseMs: 300 })
    expect(res).toMatchObject({ status: 200 })
    expect(received[0]).toMatchObject({ bytes: file.length, sha256: sha(file) })
  })

  it('that the upstream stops taking is timed as an upstream that does not answer: 504 once first_byte_timeout_ms has passed', async () => {
    const file = randomBytes(32 * 1024 * 1024)
    const res = await post('/v1/files', { ...OPENAI, 'content-type': 'application/octet-stream', 'x-test-stall': String(1024 * 1024) }, file, { pieces: 32 })
    expect(res).toMatchObject({ status: 504 })
    await eventually(() => ledgerRows(t.dbFile, "endpoint = 'other' AND status = 504 AND error = 'upstream_timeout'").length === 1)
    // Its upstream connection was closed, not left waiting: the upstream sees it once it reads again.
    const [r] = stalled.splice(0)
    r.resume()
    await eventually(() => r.socket.destroyed)
    expect(received[0].ended).toBe(false)
  })

  it('cut by the upstream part-way is answered 502 and recorded, and the server goes on', async () => {
    const file = randomBytes(8 * 1024 * 1024)
    const res = await post('/v1/files', { ...OPENAI, 'content-type': 'application/octet-stream', 'x-test-cut': String(1024 * 1024) }, file, { pieces: 16, mayBreak: true })
    if (res !== 'aborted') expect(res).toMatchObject({ status: 502 })
    expect(received[0].ended).toBe(false)
    await eventually(() => ledgerRows(t.dbFile, "endpoint = 'other' AND status = 502 AND error LIKE 'upstream_unreachable%'").length === 1)
    const small = randomBytes(1024)
    expect(await post('/v1/files', { ...OPENAI, 'content-type': 'application/octet-stream' }, small)).toMatchObject({ status: 200 })
  })

  it('refused by a budget rule is never sent upstream and is recorded; the client gets the refusal and its next call goes through', async () => {
    const capped = { authorization: 'Bearer sk-capped-0000001', 'content-type': 'application/octet-stream' }
    expect(await post('/v1/files', capped, randomBytes(1024))).toMatchObject({ status: 200 })
    const file = randomBytes(4 * 1024 * 1024)
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 })
    try {
      const refused = await postVia(agent, '/v1/files', capped, file)
      expect(refused.status).toBe(429)
      expect(JSON.parse(refused.text).error.type).toBe('rate_limited')
      await eventually(() => ledgerRows(t.dbFile, "status = 429 AND endpoint = 'other'").length === 1)
      expect(received).toHaveLength(1)
      const next = await postVia(agent, '/v1/files', { ...OPENAI, 'content-type': 'application/octet-stream' }, randomBytes(1024))
      expect(next.status).toBe(200)
    } finally {
      agent.destroy()
    }
  })

  it('its client gone part-way: the upstream request is stopped and the call recorded as the client closing it', async () => {
    const file = randomBytes(8 * 1024 * 1024)
    const before = ledgerRows(t.dbFile, "error = 'client_aborted'").length
    expect(await post('/v1/files', { ...OPENAI, 'content-type': 'application/octet-stream' }, file, { pieces: 16, pauseMs: 20, abortAfter: 4 })).toBe('aborted')
    await eventually(() => ledgerRows(t.dbFile, "error = 'client_aborted'").length === before + 1)
    await eventually(() => received.length === 1 && !received[0].ended && received[0].bytes < file.length)
  })
})
