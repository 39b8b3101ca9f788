import http from 'node:http'
import Database from 'better-sqlite3'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { eventually, request } from '../support/http'
import { serverOverMockUpstream } from '../support/server'

/** Random upstream responses (streams and bodies, any bytes, any cut) through the real proxy. */

const s = serverOverMockUpstream()

const usage = fc.dictionary(
  fc.constantFrom('prompt_tokens', 'completion_tokens', 'input_tokens', 'output_tokens', 'cache_read_input_tokens', 'cache_creation_input_tokens'),
  fc.oneof(fc.integer({ min: -5, max: 1e9 }), fc.double(), fc.string({ maxLength: 4 }), fc.constant(null)),
  { maxKeys: 4 },
)
const event = fc.oneof(
  usage.map((u) => `data: ${JSON.stringify({ model: 'gpt-4o-mini', choices: [{ delta: { content: 'hi' } }], usage: u })}\n\n`),
  usage.map((u) => `event: message_start\ndata: ${JSON.stringify({ type: 'message_start', message: { model: 'claude-sonnet-4-5-20250929', usage: u } })}\n\n`),
  usage.map((u) => `event: message_delta\ndata: ${JSON.stringify({ type: 'message_delta', usage: u })}\n\n`),
  fc.string({ maxLength: 80 }),
  fc.uint8Array({ maxLength: 80 }).map((b) => Buffer.from(b).toString('latin1')),
)
const reply = fc.record({
  path: fc.constantFrom('/v1/chat/completions', '/v1/messages'),
  streamed: fc.boolean(),
  status: fc.constantFrom(200, 200, 200, 400, 429, 500, 529),
  parts: fc.array(event, { maxLength: 8 }),
  encoding: fc.constantFrom(undefined, undefined, 'gzip' as const, 'br' as const),
})

function call(path: string): Promise<{ status: number; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${s.t.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', 'accept-encoding': 'identity' }, agent: false }, (res) => {
      const parts: Buffer[] = []
      res.on('data', (c) => parts.push(c))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(parts) }))
      res.on('error', reject)
    })
    req.on('error', reject)
    req.end(JSON.stringify({ model: 'gpt-4o-mini', stream: true, messages: [{ role: 'user', content: 'hi' }] }))
  })
}

describe('random upstream responses through the proxy', () => {
  it('pass through byte for byte, are each recorded once, with finite non-negative cost', async () => {
    let sent = 0
    await fc.assert(
      fc.asyncProperty(reply, async (r) => {
        const chunks = r.parts.map((p) => Buffer.from(p, 'latin1'))
        s.upstream.setResponder(() => ({
          status: r.status,
          headers: { 'content-type': r.streamed ? 'text/event-stream' : 'application/json' },
          chunks: chunks.length ? chunks : [Buffer.alloc(0)],
          encoding: r.encoding,
        }))
        const res = await call(r.path)
        sent++
        expect(res.status).toBe(r.status)
        if (!r.encoding) expect(res.body.equals(Buffer.concat(chunks))).toBe(true)
      }),
      { numRuns: 300, seed: 20261121 },
    )
    const db = new Database(s.t.dbFile, { readonly: true })
    try {
      const rows = (await eventually(() => {
        const all = db.prepare('SELECT cost_usd, input_tokens, output_tokens FROM calls').all() as any[]
        return all.length === sent ? all : undefined
      }, 10_000))!
      for (const row of rows) {
        expect(Number.isFinite(row.cost_usd)).toBe(true)
        expect(row.cost_usd).toBeGreaterThanOrEqual(0)
        expect(row.input_tokens).toBeGreaterThanOrEqual(0)
        expect(row.output_tokens).toBeGreaterThanOrEqual(0)
      }
    } finally {
      db.close()
    }
    expect((await request(`${s.t.url}/api/health`)).json().status).toBe('ok')
    expect(s.t.server.proxy.active).toBe(0)
  }, 120_000)
})
