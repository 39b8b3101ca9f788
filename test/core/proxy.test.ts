import http from 'node:http'
import { readFileSync } from 'node:fs'
import Database from 'better-sqlite3'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { fixture, sseChunks } from '../support/fixtures'
import { eventually, postJson, request } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'
import { ledgerRows } from '../support/ledger-rows'

let upstream: MockUpstream
let t: TestServer

beforeAll(async () => {
  upstream = await startMockUpstream()
  t = await startTestServer({ tenants: { key_mappings: [{ pattern: 'sk-team-a-*', tenant: 'team-a' }] } }, upstream.url)
})
afterAll(async () => {
  await t.cleanup()
  await upstream.close()
})
beforeEach(() => {
  upstream.requests.length = 0
})

function rows(): any[] {
  return ledgerRows(t.dbFile)
}

/** Rows on disk once every call recorded so far is written (the previous test's row included). */
async function settledCount(): Promise<number> {
  await t.server.proxy.drain(2000)
  t.server.ledger.flush()
  return rows().length
}

async function nextRow(before: number): Promise<any> {
  return eventually(() => {
    const r = rows()
    return r.length > before ? r[r.length - 1] : undefined
  })
}

describe('routes and pass-through fidelity', () => {
  it('forwards method, path, query, body and headers, minus X-Burnrate-* and hop-by-hop headers', async () => {
    upstream.setResponder(() => ({
      status: 201,
      headers: { 'content-type': 'application/json', 'x-request-id': 'req_123', 'openai-processing-ms': '7' },
      body: fixture('openai-chat/chat-nonstream-cached.json'),
    }))
    const body = JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'héllo' }] })
    const res = await request(`${t.url}/v1/chat/completions?foo=bar&x=1`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        authorization: 'Bearer sk-fidelity-0000000000001',
        'x-burnrate-agent': 'my-agent',
        'x-burnrate-session': 's-1',
        'x-burnrate-tenant': 'acme',
        'openai-organization': 'org-1',
        'proxy-authorization': 'Basic c2VjcmV0',
      },
      body,
    })
    expect(res.status).toBe(201)
    expect(res.headers['x-request-id']).toBe('req_123')
    expect(res.headers['openai-processing-ms']).toBe('7')
    expect(res.body.equals(fixture('openai-chat/chat-nonstream-cached.json'))).toBe(true)
    const got = upstream.requests[0]
    expect(got.method).toBe('POST')
    expect(got.url).toBe('/v1/chat/completions?foo=bar&x=1')
    expect(got.body.toString()).toBe(body)
    expect(got.headers.authorization).toBe('Bearer sk-fidelity-0000000000001')
    expect(got.headers['openai-organization']).toBe('org-1')
    expect(Object.keys(got.headers).filter((h) => h.startsWith('x-burnrate-'))).toEqual([])
    expect(got.headers['proxy-authorization']).toBeUndefined()
    const row = await eventually(() => rows().find((r) => r.agent === 'my-agent'))
    expect(row).toMatchObject({ session: 's-1', tenant: 'acme', provider: 'openai', status: 201, endpoint: 'chat.completions' })
  })

  it('routes the explicit prefixes and the Anthropic paths', async () => {
    upstream.setResponder(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body: '{"data":[]}' }))
    await request(`${t.url}/openai/v1/models`)
    await request(`${t.url}/anthropic/v1/models`, { headers: { 'x-api-key': 'sk-ant-abcdefghijklmnop' } })
    await request(`${t.url}/v1/models`, { headers: { 'anthropic-version': '2023-06-01' } })
    await postJson(`${t.url}/v1/messages/count_tokens`, { model: 'claude-sonnet-4-5', messages: [] })
    expect(upstream.requests.map((r) => r.url)).toEqual([
      '/v1/models',
      '/v1/models',
      '/v1/models',
      '/v1/messages/count_tokens',
    ])
    const providers = await eventually(() => {
      const r = rows().slice(-4)
      return r.length === 4 && r.every((x) => x.endpoint !== 'chat.completions') ? r.map((x) => x.provider) : undefined
    })
    expect(providers).toEqual(['openai', 'anthropic', 'anthropic', 'anthropic'])
  })

  it('keeps the path of a base URL that has one', async () => {
    const gw = await startTestServer({ providers: { openai: { base_url: `${upstream.url}/corp/openai/v1` } } }, upstream.url)
    try {
      upstream.setResponder(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body: '{}' }))
      await postJson(`${gw.url}/v1/embeddings?api-version=2`, { model: 'text-embedding-3-small', input: 'x' })
      expect(upstream.requests[0].url).toBe('/corp/openai/v1/embeddings?api-version=2')
    } finally {
      await gw.cleanup()
    }
  })

  it('answers unknown non-proxy paths with the contract error shape', async () => {
    const res = await request(`${t.url}/nothing/here`)
    expect(res.status).toBe(404)
    expect(res.headers['content-type']).toMatch(/application\/json/)
    expect(res.json().error.type).toBe('not_found')
  })

  it('serves /api/health', async () => {
    const res = await request(`${t.url}/api/health`)
    expect(res.status).toBe(200)
    const h = res.json()
    expect(h.status).toBe('ok')
    expect(typeof h.version).toBe('string')
    expect(Number.isInteger(h.uptime_s)).toBe(true)
  })
})

describe('streams', () => {
  it('delivers the first event before upstream sends the last', async () => {
    const chunks = sseChunks(fixture('anthropic/messages-stream-tool-use.sse'), false)
    upstream.setResponder(() => ({ status: 200, headers: { 'content-type': 'text/event-stream' }, chunks, delayMs: 40 }))
    const firstSeen = await new Promise<number>((resolve, reject) => {
      const req = http.request(`${t.url}/v1/messages`, { method: 'POST', headers: { 'content-type': 'application/json' } }, (res) => {
        let first = 0
        res.on('data', () => {
          if (!first) first = performance.now()
        })
        res.on('end', () => resolve(first))
        res.on('error', reject)
      })
      req.end(JSON.stringify({ model: 'claude-3-5-sonnet-20240620', stream: true, messages: [] }))
    })
    const lastSent = upstream.chunkTimes[upstream.chunkTimes.length - 1]
    expect(chunks.length).toBeGreaterThan(3)
    // The client had the first bytes while the upstream still had chunks to send.
    expect(firstSeen).toBeLessThan(lastSent)
  })

  it('meters a gzip-compressed stream and passes the compressed bytes through', async () => {
    const body = fixture('openai-chat/chat-stream-with-usage.sse')
    upstream.setResponder(() => ({ status: 200, headers: { 'content-type': 'text/event-stream' }, chunks: sseChunks(body), delayMs: 1, encoding: 'gzip' }))
    const before = await settledCount()
    const res = await postJson(`${t.url}/v1/chat/completions`, { model: 'gpt-4o-mini', stream: true }, { 'accept-encoding': 'gzip' })
    expect(res.headers['content-encoding']).toBe('gzip')
    const row = await nextRow(before)
    expect(row).toMatchObject({ input_tokens: 78, output_tokens: 9, streamed: 1, estimated: 0 })
    expect(row.cost_usd).toBeGreaterThan(0)
  })

  it('meters a brotli-compressed JSON body', async () => {
    upstream.setResponder(() => ({
      status: 200,
      headers: { 'content-type': 'application/json' },
      body: fixture('anthropic/messages-nonstream-basic.json'),
      encoding: 'br',
    }))
    const before = await settledCount()
    await postJson(`${t.url}/v1/messages`, { model: 'claude-sonnet-4-5' }, { 'accept-encoding': 'br' })
    const row = await nextRow(before)
    expect(row).toMatchObject({ input_tokens: 12, output_tokens: 29 })
  })

  it('estimates a stream that carries no usage with a real tokenizer and marks it', async () => {
    upstream.setResponder(() => ({
      status: 200,
      headers: { 'content-type': 'text/event-stream' },
      chunks: sseChunks(fixture('openai-chat/chat-stream-no-usage.sse')),
    }))
    const before = await settledCount()
    await postJson(`${t.url}/v1/chat/completions`, {
      model: 'gpt-3.5-turbo',
      stream: true,
      messages: [{ role: 'user', content: 'Tell me a joke about OpenTelemetry' }],
    })
    const row = await nextRow(before)
    expect(row.estimated).toBe(1)
    expect(row.model).toBe('gpt-3.5-turbo-0125')
    expect(row.input_tokens).toBeGreaterThan(5)
    expect(row.output_tokens).toBeGreaterThan(10)
    expect(row.cost_usd).toBeGreaterThan(0)
    expect(row.priced).toBe(1)
  })
})

describe('errors and aborts are recorded', () => {
  const ERRORS: [string, number, string][] = [
    ['errors/openai-401-invalid-api-key.json', 401, '/v1/chat/completions'],
    ['errors/openai-429-rate-limit-tpm.json', 429, '/v1/chat/completions'],
    ['errors/openai-404-model-not-found.json', 404, '/v1/chat/completions'],
    ['errors/anthropic-429-rate-limit.json', 429, '/v1/messages'],
    ['errors/anthropic-529-overloaded.json', 529, '/v1/messages'],
    ['errors/anthropic-400-invalid-request.json', 400, '/v1/messages'],
  ]
  for (const [file, status, path] of ERRORS) {
    it(`passes ${status} from ${file} through and records it`, async () => {
      upstream.setResponder(() => ({ status, headers: { 'content-type': 'application/json', 'retry-after': '7' }, body: fixture(file) }))
      const before = await settledCount()
      const res = await postJson(t.url + path, { model: 'gpt-4o-mini' })
      expect(res.status).toBe(status)
      expect(res.headers['retry-after']).toBe('7')
      expect(res.body.equals(fixture(file))).toBe(true)
      const row = await nextRow(before)
      expect(row).toMatchObject({ status, cost_usd: 0, input_tokens: 0 })
    })
  }

  it('passes a 500 through and records it', async () => {
    upstream.setResponder(() => ({ status: 500, headers: { 'content-type': 'application/json' }, body: '{"error":{"message":"boom"}}' }))
    const before = await settledCount()
    const res = await postJson(`${t.url}/v1/chat/completions`, { model: 'gpt-4o-mini' })
    expect(res.status).toBe(500)
    expect(res.text).toBe('{"error":{"message":"boom"}}')
    expect((await nextRow(before)).status).toBe(500)
  })

  it('answers 502 in the contract shape when upstream refuses connections, and records it', async () => {
    const down = await startTestServer({ providers: { openai: { base_url: 'http://127.0.0.1:1/v1' } } }, upstream.url)
    try {
      const res = await postJson(`${down.url}/v1/chat/completions`, { model: 'gpt-4o-mini' })
      expect(res.status).toBe(502)
      expect(res.json().error.type).toBe('upstream_unreachable')
      const db = new Database(down.dbFile, { readonly: true })
      const row = await eventually(() => db.prepare('SELECT * FROM calls').get() as any)
      db.close()
      expect(row).toMatchObject({ status: 502, error: 'upstream_unreachable: ECONNREFUSED' })
    } finally {
      await down.cleanup()
    }
  })

  it('records a stream the client abandoned, with what was metered so far, and aborts upstream', async () => {
    const chunks = sseChunks(fixture('anthropic/messages-stream-cache-write.sse'), false)
    upstream.setResponder(() => ({ status: 200, headers: { 'content-type': 'text/event-stream' }, chunks, delayMs: 100 }))
    const before = await settledCount()
    const ended = upstream.endings.length
    await new Promise<void>((resolve) => {
      const req = http.request(`${t.url}/v1/messages`, { method: 'POST', headers: { 'content-type': 'application/json' } }, (res) => {
        let n = 0
        res.on('data', () => {
          if (++n === 2) {
            req.destroy()
            resolve()
          }
        })
      })
      req.on('error', () => {})
      req.end(JSON.stringify({ model: 'claude-3-5-sonnet-20240620', stream: true, messages: [] }))
    })
    const row = await nextRow(before)
    expect(row.status).toBe(499)
    expect(row.error).toBe('client_aborted')
    // message_start had arrived: its input and cache-write tokens were metered and priced.
    expect(row.input_tokens).toBe(4 + 1165)
    expect(row.cache_write_tokens).toBe(1165)
    expect(row.cost_usd).toBeGreaterThan(0)
    // The upstream saw its client go away before it sent everything: its response ended cut, not whole.
    await eventually(() => upstream.endings.length > ended)
    expect(upstream.endings.slice(ended)).toEqual(['gone'])
    expect(upstream.chunkTimes.length).toBeLessThan(chunks.length)
  })
})

describe('attribution and secrets', () => {
  it('stores the key hash and hint, maps tenants, and never writes the raw key', async () => {
    const key = 'sk-team-a-SECRETKEYVALUE-9f3a'
    upstream.setResponder(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body: fixture('openai-chat/chat-nonstream-reasoning.json') }))
    const before = await settledCount()
    await postJson(`${t.url}/v1/chat/completions`, { model: 'gpt-5-nano' }, { authorization: `Bearer ${key}` })
    const row = await nextRow(before)
    const { createHash } = await import('node:crypto')
    expect(row.api_key_hash).toBe(createHash('sha256').update(key).digest('hex'))
    expect(row.key_hint).toBe('sk-…9f3a')
    expect(row.tenant).toBe('team-a')
    t.server.ledger.flush()
    for (const f of [t.dbFile, `${t.dbFile}-wal`]) {
      let bytes: Buffer
      try {
        bytes = readFileSync(f)
      } catch {
        continue
      }
      expect(bytes.includes(Buffer.from('SECRETKEYVALUE'))).toBe(false)
    }
  })

  it('gives short keys the hint … alone', async () => {
    upstream.setResponder(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body: '{}' }))
    const before = await settledCount()
    await request(`${t.url}/v1/models`, { headers: { 'x-api-key': 'short' } })
    expect((await nextRow(before)).key_hint).toBe('…')
  })
})

describe('pricing', () => {
  it('records an unknown model with cost 0 and priced false, and prices it from pricing.overrides', async () => {
    const body = JSON.stringify({ model: 'my-private-model', usage: { prompt_tokens: 1000, completion_tokens: 500 } })
    upstream.setResponder(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body }))
    const before = await settledCount()
    await postJson(`${t.url}/v1/chat/completions`, { model: 'my-private-model' })
    expect(await nextRow(before)).toMatchObject({ priced: 0, cost_usd: 0, input_tokens: 1000, output_tokens: 500 })

    const priced = await startTestServer(
      { pricing: { overrides: [{ model: 'my-private-*', input_mtok: 2, output_mtok: 8 }] } },
      upstream.url,
    )
    try {
      await postJson(`${priced.url}/v1/chat/completions`, { model: 'my-private-model' })
      const db = new Database(priced.dbFile, { readonly: true })
      const row = await eventually(() => db.prepare('SELECT * FROM calls').get() as any)
      db.close()
      expect(row.priced).toBe(1)
      expect(row.cost_usd).toBeCloseTo((1000 * 2 + 500 * 8) / 1e6, 12)
    } finally {
      await priced.cleanup()
    }
  })
})

describe('durability', () => {
  it('keeps every record across a restart and reloads spend', async () => {
    const s1 = await startTestServer({}, upstream.url)
    upstream.setResponder(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body: fixture('anthropic/messages-nonstream-cache-write-and-read.json') }))
    for (let i = 0; i < 5; i++) await postJson(`${s1.url}/v1/messages`, { model: 'claude-sonnet-4-5' }, { 'x-api-key': 'sk-ant-durability-key-0001' })
    const spent = s1.server.ledger.spend.totals().day
    expect(spent).toBeGreaterThan(0)
    const s2 = await s1.restart()
    try {
      const db = new Database(s2.dbFile, { readonly: true })
      expect((db.prepare('SELECT COUNT(*) AS n FROM calls').get() as any).n).toBe(5)
      db.close()
      expect(s2.server.ledger.spend.totals().day).toBeCloseTo(spent, 12)
    } finally {
      await s2.cleanup()
    }
  })
})
