import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { once } from 'node:events'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { eventually } from '../support/http'
import { type TestServer, startTestServer } from '../support/server'
import { lastLedgerRow } from '../support/ledger-rows'

/**
 * A response of a GiB is streamed through, not held: the process's peak memory rises by less
 * than half the body's size (holding the body would take more than all of it; what rise there
 * is, is garbage not yet collected), and the call is still metered. The body is this large
 * because this process holds the client, the server and the upstream at once: its peak moves by
 * 25-350 MB with the collector's timing whatever the body's size (measured with 400 and 800 MB
 * bodies), which a 400 MB body's bound of 200 did not always clear.
 */

const TOTAL_MB = 1024
let upstream: http.Server
let upstreamUrl: string
let t: TestServer

/** Writes `total` bytes made of `piece` repeated, respecting backpressure, then `tail`. */
async function pump(res: http.ServerResponse, piece: Buffer, total: number, tail: Buffer): Promise<void> {
  let sent = 0
  while (sent < total) {
    if (res.destroyed) return
    if (!res.write(piece)) await once(res, 'drain')
    sent += piece.length
  }
  res.end(tail)
}

beforeAll(async () => {
  const sseEvent = Buffer.from(
    'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"' + 'x'.repeat(200) + '"}}\n\n',
  )
  const ssePiece = Buffer.concat(Array.from({ length: Math.floor(65536 / sseEvent.length) }, () => sseEvent))
  const sseHead = Buffer.from(
    'event: message_start\ndata: {"type":"message_start","message":{"model":"claude-sonnet-4-5-20250929","usage":{"input_tokens":20,"output_tokens":1}}}\n\n',
  )
  const sseTail = Buffer.from('event: message_delta\ndata: {"type":"message_delta","usage":{"output_tokens":5000000}}\n\nevent: message_stop\ndata: {"type":"message_stop"}\n\n')
  const chatEvent = Buffer.from(
    'data: {"id":"c","object":"chat.completion.chunk","model":"gpt-4o-mini-2024-07-18","choices":[{"index":0,"delta":{"content":"' + 'word '.repeat(40) + '"}}]}\n\n',
  )
  const chatPiece = Buffer.concat(Array.from({ length: Math.floor(65536 / chatEvent.length) }, () => chatEvent))
  const jsonPiece = Buffer.from(JSON.stringify({ object: 'embedding', index: 0, embedding: Array(4000).fill(0.012345) }) + ',')
  upstream = http.createServer(async (req, res) => {
    for await (const _ of req) void _
    if (req.url?.includes('/chat/completions')) {
      res.writeHead(200, { 'content-type': 'text/event-stream' })
      await pump(res, chatPiece, TOTAL_MB * 1024 * 1024, Buffer.from('data: [DONE]\n\n'))
    } else if (req.url?.includes('/v1/messages')) {
      res.writeHead(200, { 'content-type': 'text/event-stream' })
      res.write(sseHead)
      await pump(res, ssePiece, TOTAL_MB * 1024 * 1024, sseTail)
    } else {
      res.writeHead(200, { 'content-type': 'application/json' })
      res.write('{"object":"list","data":[')
      await pump(res, jsonPiece, TOTAL_MB * 1024 * 1024, Buffer.from('{"object":"embedding","index":1,"embedding":[0]}],"model":"text-embedding-3-small","usage":{"prompt_tokens":8,"total_tokens":8}}'))
    }
  })
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r))
  upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`
  t = await startTestServer({}, upstreamUrl)
})
afterAll(async () => {
  await t.cleanup()
  upstream.closeAllConnections()
  await new Promise<void>((r) => upstream.close(() => r()))
})

/** Streams the call, counting bytes; samples this process's RSS meanwhile and reports the peak rise. */
async function measure(path: string, body: unknown): Promise<{ bytes: number; status: number; peakRiseMb: number }> {
  global.gc?.()
  const base = process.memoryUsage().rss
  let peak = base
  const sampler = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage().rss)
  }, 20)
  try {
    return await new Promise((resolve, reject) => {
      const req = http.request(`${t.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, agent: false }, (res) => {
        let bytes = 0
        res.on('data', (c: Buffer) => {
          bytes += c.length
        })
        res.on('end', () => resolve({ bytes, status: res.statusCode ?? 0, peakRiseMb: (peak - base) / 1024 / 1024 }))
        res.on('error', reject)
      })
      req.on('error', reject)
      req.end(JSON.stringify(body))
    })
  } finally {
    clearInterval(sampler)
  }
}

function lastRow(): any {
  return lastLedgerRow(t.dbFile)
}

describe(`a ${TOTAL_MB} MB response`, () => {
  it('streams an SSE body through with memory far below its size, and meters it', async () => {
    const r = await measure('/v1/messages', { model: 'claude-sonnet-4-5-20250929', stream: true, messages: [] })
    expect(r.status).toBe(200)
    expect(r.bytes).toBeGreaterThan(TOTAL_MB * 1024 * 1024)
    expect(r.peakRiseMb).toBeLessThan(TOTAL_MB / 2)
    const row = await eventually(() => {
      const x = lastRow()
      return x?.output_tokens === 5000000 ? x : undefined
    })
    expect(row).toMatchObject({ status: 200, input_tokens: 20, estimated: 0 })
  }, 120_000)

  it('streams an SSE body without usage through with bounded memory, and estimates it', async () => {
    const r = await measure('/v1/chat/completions', { model: 'gpt-4o-mini', stream: true, messages: [{ role: 'user', content: 'hi' }] })
    expect(r.status).toBe(200)
    expect(r.bytes).toBeGreaterThan(TOTAL_MB * 1024 * 1024)
    expect(r.peakRiseMb).toBeLessThan(TOTAL_MB / 2)
    const row = await eventually(() => {
      const x = lastRow()
      return x?.endpoint === 'chat.completions' ? x : undefined
    }, 60_000)
    expect(row).toMatchObject({ status: 200, estimated: 1 })
    expect(row.output_tokens).toBeGreaterThan(0)
  }, 120_000)

  it('streams a JSON body through with bounded memory, and meters its usage from the tail', async () => {
    const r = await measure('/v1/embeddings', { model: 'text-embedding-3-small', input: 'x' })
    expect(r.status).toBe(200)
    expect(r.bytes).toBeGreaterThan(TOTAL_MB * 1024 * 1024)
    expect(r.peakRiseMb).toBeLessThan(TOTAL_MB / 2)
    const row = await eventually(() => {
      const x = lastRow()
      return x?.endpoint === 'embeddings' ? x : undefined
    })
    expect(row).toMatchObject({ status: 200, input_tokens: 8, estimated: 0 })
  }, 120_000)
})
