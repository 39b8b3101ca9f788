import http from 'node:http'
import net from 'node:net'
import { describe, expect, it } from 'vitest'
import { fixture, sseChunks } from '../support/fixtures'
import { eventually, request } from '../support/http'
import { serverOverMockUpstream } from '../support/server'
import { ledgerRows } from '../support/ledger-rows'

/** The client goes away at every stage of a call: the proxy stops the upstream call and records what it knows. */

const s = serverOverMockUpstream()

function rows(): any[] {
  return ledgerRows(s.t.dbFile)
}

async function nextRow(before: number): Promise<any> {
  return eventually(() => {
    const r = rows()
    return r.length > before ? r[r.length - 1] : undefined
  })
}

const STREAM = fixture('anthropic/messages-stream-cache-write.sse')
const BODY = JSON.stringify({ model: 'claude-3-5-sonnet-20240620', stream: true, max_tokens: 10, messages: [] })

/** Sends a streaming call and destroys the connection when `when` says so ('request-sent': once the upstream has it). */
function callAndDrop(when: 'request-sent' | 'headers' | 'after-last-byte'): Promise<void> {
  const sent = s.upstream.requests.length
  return new Promise((resolve) => {
    const req = http.request(`${s.t.url}/v1/messages`, { method: 'POST', headers: { 'content-type': 'application/json' }, agent: false }, (res) => {
      if (when === 'headers') {
        req.destroy()
        resolve()
        return
      }
      res.on('data', () => {})
      res.on('end', () => {
        req.socket?.destroy()
        resolve()
      })
    })
    req.on('error', () => resolve())
    req.end(BODY)
    if (when === 'request-sent') {
      // A condition, not a delay: on a busy machine the call may take longer to go upstream (the
      // price library loading), and a client gone before it does is another case (never sent).
      void eventually(() => s.upstream.requests.length > sent || undefined).then(() => {
        req.destroy()
        resolve()
      })
    }
  })
}

describe('client disconnects', () => {
  it('before upstream answers: the upstream call is aborted and the call recorded as 499 with cost 0', async () => {
    s.upstream.setResponder(() => ({ status: 200, headers: { 'content-type': 'text/event-stream' }, chunks: sseChunks(STREAM), headerDelayMs: 600 }))
    const before = rows().length
    const upstreamRequests = s.upstream.requests.length
    await callAndDrop('request-sent')
    const row = await nextRow(before)
    expect(row).toMatchObject({ status: 499, error: 'client_aborted', cost_usd: 0, input_tokens: 0 })
    expect(s.upstream.requests.length).toBe(upstreamRequests + 1)
    expect(s.t.server.proxy.active).toBe(0)
    // When the upstream finally answers, its connection is already gone: not one chunk is written.
    const ended = s.upstream.endings.length
    await eventually(() => s.upstream.endings.length > ended)
    expect(s.upstream.endings.slice(ended)).toEqual(['gone'])
    expect(s.upstream.chunkTimes.length).toBe(0)
  })

  it('right after the response headers: recorded as 499 with what was metered', async () => {
    s.upstream.setResponder(() => ({ status: 200, headers: { 'content-type': 'text/event-stream' }, chunks: sseChunks(STREAM, false), delayMs: 50 }))
    const before = rows().length
    const ended = s.upstream.endings.length
    await callAndDrop('headers')
    const row = await nextRow(before)
    expect(row.status).toBe(499)
    expect(row.error).toBe('client_aborted')
    expect(s.t.server.proxy.active).toBe(0)
    // The upstream stopped sending once its client was gone: its response ended cut, not whole.
    await eventually(() => s.upstream.endings.length > ended)
    expect(s.upstream.endings.slice(ended)).toEqual(['gone'])
    expect(s.upstream.chunkTimes.length).toBeLessThan(sseChunks(STREAM, false).length)
  })

  it('after the last byte: recorded as a complete call with its full usage', async () => {
    s.upstream.setResponder(() => ({ status: 200, headers: { 'content-type': 'text/event-stream' }, chunks: sseChunks(STREAM), delayMs: 1 }))
    const before = rows().length
    await callAndDrop('after-last-byte')
    const row = await nextRow(before)
    expect(row).toMatchObject({ status: 200, error: null, input_tokens: 4 + 1165, output_tokens: 201 })
    expect(row.cost_usd).toBeGreaterThan(0)
  })

  it('while still sending its request body: nothing goes upstream, nothing is held', async () => {
    const upstreamRequests = s.upstream.requests.length
    const before = rows().length
    const { port } = new URL(s.t.url)
    const sock = net.connect(Number(port), '127.0.0.1')
    await new Promise((r) => sock.once('connect', r))
    sock.write(`POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"model":`)
    // The proxy has the call and reads its body; the client goes.
    await eventually(() => s.t.server.proxy.active === 1)
    sock.destroy()
    // The proxy let it go (a call it had sent on would be under way until answered and recorded).
    await eventually(() => s.t.server.proxy.active === 0)
    // A whole call after it goes upstream and is recorded: the one dropped did neither, before it.
    s.upstream.setResponder(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body: fixture('anthropic/messages-nonstream-basic.json') }))
    const whole = await request(`${s.t.url}/v1/messages`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'claude-3-5-sonnet-20240620', max_tokens: 10, messages: [] }) })
    expect(whole.status).toBe(200)
    const row = await nextRow(before)
    expect(rows().length).toBe(before + 1)
    expect(row).toMatchObject({ status: 200, error: null })
    expect(s.upstream.requests.length).toBe(upstreamRequests + 1)
    expect(JSON.parse(s.upstream.requests[upstreamRequests].body.toString('utf8'))).toMatchObject({ max_tokens: 10, messages: [] })
    expect((await request(`${s.t.url}/api/health`)).status).toBe(200)
  })

  it('a hundred clients dropping at random stages leave no call under way and every call recorded', async () => {
    s.upstream.setResponder(() => ({ status: 200, headers: { 'content-type': 'text/event-stream' }, chunks: sseChunks(STREAM, false), delayMs: 5 }))
    const before = rows().length
    const stages = ['request-sent', 'headers', 'after-last-byte'] as const
    await Promise.all(Array.from({ length: 100 }, (_, i) => callAndDrop(stages[i % 3])))
    await eventually(() => s.t.server.proxy.active === 0, 5000)
    // Every call that reached the proxy's upstream stage is recorded: 100 of them.
    await eventually(() => rows().length === before + 100, 5000)
    const recent = rows().slice(before)
    expect(recent.filter((r) => r.status === 200)).toHaveLength(33)
    expect(recent.filter((r) => r.status === 499).length).toBe(67)
  })
})
