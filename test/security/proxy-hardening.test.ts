import http from 'node:http'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { fixture } from '../support/fixtures'
import { eventually, request } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'

/** Proxied routes: upstream cookies never reach the browser origin, TRACE is refused, buffered bodies have a total. */
let upstream: MockUpstream
let t: TestServer
beforeAll(async () => {
  upstream = await startMockUpstream(() => ({
    status: 200,
    headers: { 'content-type': 'application/json', 'set-cookie': '__cf_bm=abc; Path=/; HttpOnly', 'x-request-id': 'req_1' },
    body: fixture('openai-chat/chat-nonstream-cached.json'),
  }))
  t = await startTestServer({ server: { max_buffered_body_mb: 1 } }, upstream.url)
})
afterAll(async () => {
  await t.cleanup()
  await upstream.close()
})
beforeEach(() => {
  upstream.requests.length = 0
})

const CHAT = JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] })
const chat = (body = CHAT) =>
  request(`${t.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer sk-hardening-0000001' }, body })

describe('proxied responses', () => {
  it('drop the upstream Set-Cookie and keep every other header', async () => {
    const res = await chat()
    expect(res.status).toBe(200)
    expect(res.headers['set-cookie']).toBeUndefined()
    expect(res.headers['x-request-id']).toBe('req_1')
    expect(upstream.requests).toHaveLength(1)
  })
})

describe('TRACE', () => {
  it('is refused on proxied routes with a 405, and nothing goes upstream', async () => {
    for (const path of ['/v1/models', '/anthropic/v1/messages', '/gemini/v1beta/models']) {
      const res = await request(`${t.url}${path}`, { method: 'TRACE', headers: { authorization: 'Bearer sk-hardening-0000001' } })
      expect(res.status, path).toBe(405)
      expect(res.json().error.type).toBe('method_not_allowed')
      expect(res.headers.allow).toBe('GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS')
      expect(res.text).not.toContain('sk-hardening')
    }
    expect(upstream.requests).toHaveLength(0)
  })
})

describe('request bodies held in memory', () => {
  it('past server.max_buffered_body_mb in all, calls get 503 service_unavailable with Retry-After; room comes back when a call ends', async () => {
    const size = 700_000
    // A slow upload that has announced 700 KB and sent 1 KB: its share is held while it arrives.
    let slowStatus = 0
    let slowUpload: () => void = () => {}
    const slowDone = new Promise<void>((resolve, reject) => {
      const req = http.request(`${t.url}/v1/chat/completions`, {
        method: 'POST',
        agent: false,
        headers: { 'content-type': 'application/json', authorization: 'Bearer sk-hardening-0000001', 'content-length': String(size) },
      }, (res) => {
        slowStatus = res.statusCode ?? 0
        res.resume()
        res.on('end', resolve)
      })
      req.on('error', reject)
      req.write(' '.repeat(1000))
      slowUpload = () => req.end(CHAT + ' '.repeat(size - 1000 - CHAT.length))
    })
    const big = CHAT + ' '.repeat(size - CHAT.length)
    const refused = await eventually(async () => {
      const r = await chat(big)
      return r.status === 503 ? r : undefined
    }, 10_000) as Awaited<ReturnType<typeof chat>>
    expect(refused.json().error.type).toBe('service_unavailable')
    expect(refused.json().error.message).toMatch(/max_buffered_body_mb/)
    expect(Number(refused.headers['retry-after'])).toBeGreaterThanOrEqual(1)
    // Small calls still fit beside it.
    expect((await chat()).status).toBe(200)
    slowUpload()
    await slowDone
    expect(slowStatus).toBe(200)
    // Its share is given back: a big body fits again.
    await eventually(async () => (await chat(big)).status === 200, 10_000)
  })
})
