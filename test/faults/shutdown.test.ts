import http from 'node:http'
import Database from 'better-sqlite3'
import { describe, expect, it } from 'vitest'
import { fixture } from '../support/fixtures'
import { eventually, postJson } from '../support/http'
import { type TestServer, serversPerTest } from '../support/server'

/**
 * Shutdown (SIGTERM, SIGINT, the desktop app's quit) lets calls under way finish: a call counts
 * as under way from when it is routed, before its body has all arrived.
 */

const servers = serversPerTest()
const BODY = JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] })

function calls(t: TestServer): number {
  const db = new Database(t.dbFile, { readonly: true })
  try {
    return (db.prepare('SELECT count(*) AS n FROM calls').get() as { n: number }).n
  } finally {
    db.close()
  }
}

interface SlowCall {
  /** Sends the rest of the body. */
  rest(): void
  /** The client goes away, its body half sent. */
  drop(): void
  answer: Promise<{ status: number; error?: string }>
}

/** A call whose headers and first bytes of body have reached the server (it asked for the body: 100 Continue). */
function startSlowCall(t: TestServer): Promise<SlowCall> {
  const url = new URL(t.url)
  return new Promise((started) => {
    let settle!: (v: { status: number; error?: string }) => void
    const answer = new Promise<{ status: number; error?: string }>((r) => (settle = r))
    const req = http.request(
      {
        host: url.hostname,
        port: url.port,
        path: '/v1/chat/completions',
        method: 'POST',
        agent: false,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(BODY), authorization: 'Bearer sk-test', expect: '100-continue' },
      },
      (res) => {
        res.resume()
        res.on('end', () => settle({ status: res.statusCode ?? 0 }))
        res.on('error', (e) => settle({ status: -1, error: e.message }))
      },
    )
    req.on('error', (e) => settle({ status: -1, error: e.message }))
    req.on('continue', () => {
      req.write(BODY.slice(0, 10), () => started({ rest: () => req.end(BODY.slice(10)), drop: () => req.destroy(), answer }))
    })
    req.flushHeaders()
  })
}

describe('shutdown with calls under way', () => {
  it('lets a call whose body is still arriving finish, and records it', async () => {
    const upstream = await servers.upstream(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body: fixture('openai-chat/chat-nonstream-cached.json') }))
    const t = await servers.server({}, upstream.url)
    // A first call, so the prices are loaded.
    expect((await postJson(`${t.url}/v1/chat/completions`, JSON.parse(BODY), { authorization: 'Bearer sk-test' })).status).toBe(200)
    await eventually(() => calls(t) === 1)

    const slow = await startSlowCall(t)
    expect(t.server.proxy.active).toBe(1)
    const closed = t.server.close(10_000)
    slow.rest()
    const answer = await slow.answer
    await closed
    expect({ answer, calls: calls(t) }).toEqual({ answer: { status: 200 }, calls: 2 })
  })

  it('cuts a call whose body stops coming once the grace is over, and lets go of it', async () => {
    const upstream = await servers.upstream()
    const t = await servers.server({}, upstream.url)
    const slow = await startSlowCall(t)
    expect(t.server.proxy.active).toBe(1)
    await t.server.close(200)
    expect((await slow.answer).status).toBe(-1)
    expect(t.server.proxy.active).toBe(0)
  })

  it('lets go of requests that never became calls: body too large, memory full, client gone', async () => {
    const upstream = await servers.upstream()
    const t = await servers.server({ server: { max_buffered_body_mb: 1 } }, upstream.url)
    // Only the headers are sent: each is refused for the length it announces.
    expect(await announce(t, 1e12)).toBe(413)
    expect(await announce(t, 2 * 1024 * 1024)).toBe(503)
    expect(t.server.proxy.active).toBe(0)
    const slow = await startSlowCall(t)
    expect(t.server.proxy.active).toBe(1)
    slow.drop()
    await eventually(() => t.server.proxy.active === 0)
    // Nothing left under way: shutdown has nothing to wait for.
    expect(await t.server.proxy.drain(0)).toBe(true)
  })
})

/** A call announcing `length` bytes of body and sending none: the status it gets. */
function announce(t: TestServer, length: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${t.url}/v1/chat/completions`, { method: 'POST', agent: false, headers: { 'content-type': 'application/json', 'content-length': length } }, (res) => {
      res.resume()
      resolve(res.statusCode ?? 0)
      req.destroy()
    })
    req.on('error', reject)
    req.flushHeaders()
  })
}
