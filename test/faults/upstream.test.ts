import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { fixture, sseChunks } from '../support/fixtures'
import { eventually, postJson, request } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'
import { ledgerRows } from '../support/ledger-rows'

/** Faults on the upstream side: each gets a clear answer (when nothing was sent yet) and a record. */

let upstream: MockUpstream
let t: TestServer

beforeAll(async () => {
  upstream = await startMockUpstream()
  t = await startTestServer({ upstream: { first_byte_timeout_ms: 400, idle_timeout_ms: 400, connect_timeout_ms: 400 } }, upstream.url)
})
afterAll(async () => {
  await t.cleanup()
  await upstream.close()
})
beforeEach(() => {
  upstream.requests.length = 0
})

function rows(file = t.dbFile): any[] {
  return ledgerRows(file)
}

async function nextRow(before: number, file = t.dbFile): Promise<any> {
  return eventually(() => {
    const r = rows(file)
    return r.length > before ? r[r.length - 1] : undefined
  })
}

const ANTHROPIC_STREAM = fixture('anthropic/messages-stream-cache-write.sse')
const MESSAGES = { model: 'claude-3-5-sonnet-20240620', stream: true, max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }

/** Streams a call and reports what the client saw: status, bytes, and whether the stream was cut. */
function streamCall(url: string, body: unknown): Promise<{ status: number; bytes: Buffer; cut: boolean; json?: any }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: 'POST', headers: { 'content-type': 'application/json' }, agent: false }, (res) => {
      const parts: Buffer[] = []
      let done = false
      const end = (cut: boolean) => {
        if (done) return
        done = true
        const bytes = Buffer.concat(parts)
        let json: any
        try {
          json = JSON.parse(bytes.toString('utf8'))
        } catch {}
        resolve({ status: res.statusCode ?? 0, bytes, cut, json })
      }
      res.on('data', (c: Buffer) => parts.push(c))
      res.on('end', () => end(!res.complete))
      res.on('aborted', () => end(true))
      res.on('error', () => end(true))
      res.on('close', () => end(!res.complete))
    })
    req.on('error', reject)
    req.end(JSON.stringify(body))
  })
}

describe('upstream faults', () => {
  it('refused connection: 502 upstream_unreachable, recorded', async () => {
    const closed = http.createServer()
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r))
    const deadPort = (closed.address() as AddressInfo).port
    await new Promise<void>((r) => closed.close(() => r()))
    const s = await startTestServer({ providers: { anthropic: { base_url: `http://127.0.0.1:${deadPort}` } } }, upstream.url)
    try {
      const res = await postJson(`${s.url}/v1/messages`, MESSAGES)
      expect(res.status).toBe(502)
      expect(res.json().error.type).toBe('upstream_unreachable')
      expect(res.json().error.message).toMatch(/ECONNREFUSED/)
      expect(await nextRow(0, s.dbFile)).toMatchObject({ status: 502, error: 'upstream_unreachable: ECONNREFUSED', cost_usd: 0 })
    } finally {
      await s.cleanup()
    }
  })

  it('connection reset before any response: 502 in the contract shape, recorded', async () => {
    const rude = http.createServer((req) => req.socket.destroy())
    await new Promise<void>((r) => rude.listen(0, '127.0.0.1', r))
    const s = await startTestServer(
      { providers: { anthropic: { base_url: `http://127.0.0.1:${(rude.address() as AddressInfo).port}` } } },
      upstream.url,
    )
    try {
      const res = await postJson(`${s.url}/v1/messages`, MESSAGES)
      expect(res.status).toBe(502)
      expect(res.json().error.type).toBe('upstream_unreachable')
      expect(await nextRow(0, s.dbFile)).toMatchObject({ status: 502, error: 'upstream_unreachable: CONNECTION_CLOSED' })
    } finally {
      await s.cleanup()
      await new Promise<void>((r) => rude.close(() => r()))
    }
  })

  it('stall before the first byte: 504 upstream_timeout after first_byte_timeout_ms, recorded', async () => {
    upstream.setResponder(() => ({ status: 200, headerDelayMs: 5_000, body: '{}' }))
    const before = rows().length
    const res = await postJson(`${t.url}/v1/messages`, MESSAGES)
    expect(res.status).toBe(504)
    expect(res.json().error.type).toBe('upstream_timeout')
    expect(res.json().error.message).toMatch(/did not answer in time/)
    expect(await nextRow(before)).toMatchObject({ status: 504, error: 'upstream_timeout', cost_usd: 0 })
    expect(t.server.proxy.active).toBe(0)
  })

  it('stall mid-stream: the client stream is cut after idle_timeout_ms; the call is recorded with what was metered', async () => {
    const chunks = sseChunks(ANTHROPIC_STREAM, false)
    upstream.setResponder(() => ({ status: 200, headers: { 'content-type': 'text/event-stream' }, chunks, stallAfterChunks: 2 }))
    const before = rows().length
    const res = await streamCall(`${t.url}/v1/messages`, MESSAGES)
    expect(res.status).toBe(200)
    expect(res.cut).toBe(true)
    expect(res.bytes.equals(Buffer.concat(chunks.slice(0, 2)))).toBe(true)
    const row = await nextRow(before)
    expect(row).toMatchObject({ status: 504, error: 'upstream_stalled', input_tokens: 4 + 1165, cache_write_tokens: 1165 })
    expect(row.cost_usd).toBeGreaterThan(0)
  })

  it('reset mid-stream: the client stream is cut; the call is recorded with what was metered', async () => {
    const chunks = sseChunks(ANTHROPIC_STREAM, false)
    upstream.setResponder(() => ({ status: 200, headers: { 'content-type': 'text/event-stream' }, chunks, resetAfterChunks: 3, delayMs: 5 }))
    const before = rows().length
    const res = await streamCall(`${t.url}/v1/messages`, MESSAGES)
    expect(res.status).toBe(200)
    expect(res.cut).toBe(true)
    const row = await nextRow(before)
    expect(row).toMatchObject({ status: 502, error: 'upstream_reset', input_tokens: 4 + 1165 })
    expect(row.cost_usd).toBeGreaterThan(0)
  })

  it('malformed JSON: passed through byte for byte, recorded, nothing breaks', async () => {
    const bodies = ['{"id":"x","usage":{"prompt_tokens":', 'not json at all', '\u0000\u00ff\ufffd', '[1,2', '{"usage":{"prompt_tokens":-5,"completion_tokens":"7","total_tokens":1e400}}']
    for (const body of bodies) {
      upstream.setResponder(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body }))
      const before = rows().length
      const res = await postJson(`${t.url}/v1/chat/completions`, { model: 'gpt-4o-mini', messages: [] })
      expect(res.status).toBe(200)
      expect(res.text).toBe(body)
      const row = await nextRow(before)
      expect(row.status).toBe(200)
      expect(Number.isFinite(row.cost_usd)).toBe(true)
      expect(row.cost_usd).toBeGreaterThanOrEqual(0)
      expect(row.input_tokens).toBeGreaterThanOrEqual(0)
    }
  })

  it('malformed SSE: broken events, invalid UTF-8, bare CRs and a 20 MB line pass through; the call is recorded', async () => {
    const bad = [
      Buffer.from('event: message_start\ndata: {"type":"message_start","message":{"usage":{"input_tokens":'),
      Buffer.from([0xff, 0xfe, 0xc3, 0x0a, 0x0d, 0x0d]),
      Buffer.from('data: {}\r\r\ndata: [DONE]\n\n:comment\nretry: x\nid\n\n'),
      Buffer.alloc(20 * 1024 * 1024, 0x61),
      Buffer.from('\n\nevent: message_delta\ndata: {"type":"message_delta","usage":{"output_tokens":"many"}}\n\n'),
    ]
    upstream.setResponder(() => ({ status: 200, headers: { 'content-type': 'text/event-stream' }, chunks: bad }))
    const before = rows().length
    const res = await streamCall(`${t.url}/v1/messages`, MESSAGES)
    expect(res.status).toBe(200)
    expect(res.cut).toBe(false)
    expect(res.bytes.equals(Buffer.concat(bad))).toBe(true)
    const row = await nextRow(before)
    expect(row.status).toBe(200)
    expect(Number.isFinite(row.cost_usd)).toBe(true)
    // And the next, well-formed call is metered as usual.
    upstream.setResponder(() => ({ status: 200, headers: { 'content-type': 'text/event-stream' }, chunks: sseChunks(ANTHROPIC_STREAM) }))
    const ok = await streamCall(`${t.url}/v1/messages`, MESSAGES)
    expect(ok.bytes.equals(ANTHROPIC_STREAM)).toBe(true)
    expect(await nextRow(before + 1)).toMatchObject({ status: 200, input_tokens: 4 + 1165, output_tokens: 201 })
  })

  it('an upstream error status with a body that is not JSON is passed through and recorded', async () => {
    upstream.setResponder(() => ({ status: 503, headers: { 'content-type': 'text/html' }, body: '<html>overloaded</html>' }))
    const before = rows().length
    const res = await postJson(`${t.url}/v1/chat/completions`, { model: 'gpt-4o-mini', messages: [] })
    expect(res.status).toBe(503)
    expect(res.text).toBe('<html>overloaded</html>')
    expect(await nextRow(before)).toMatchObject({ status: 503, cost_usd: 0 })
  })

  it('the server still answers after all of the above', async () => {
    expect((await request(`${t.url}/api/health`)).json().status).toBe('ok')
    expect(t.server.proxy.active).toBe(0)
  })
})
