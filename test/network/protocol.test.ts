import http from 'node:http'
import type { AddressInfo, Socket } from 'node:net'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import { fixture } from '../support/fixtures'
import { eventually, postJson, request } from '../support/http'
import { startLoggedServer } from './support'
import { ledgerRows } from '../support/ledger-rows'

/** HTTP details from upstreams: informational responses, trailers, kept-alive connections closed under a call, oversized bodies. */

const JSON_BODY = fixture('openai-chat/chat-nonstream-cached.json')
const CHAT = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }

const closers: (() => Promise<void>)[] = []
afterEach(async () => {
  for (const c of closers.splice(0)) await c()
})
afterAll(async () => {
  for (const c of closers.splice(0)) await c()
})

async function upstreamWith(handler: http.RequestListener): Promise<{ url: string; server: http.Server }> {
  const server = http.createServer(handler)
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  closers.push(
    () =>
      new Promise<void>((r) => {
        server.closeAllConnections()
        server.close(() => r())
      }),
  )
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server }
}

async function burnrateFor(upstreamUrl: string) {
  const s = await startLoggedServer({ providers: { openai: { base_url: `${upstreamUrl}/v1` } } })
  closers.push(() => s.stop())
  return s
}

function rows(dbFile: string): any[] {
  return ledgerRows(dbFile)
}

describe('upstream protocol details', () => {
  it('103 Early Hints before the answer is not the answer: the client gets the 200, recorded with its tokens', async () => {
    const up = await upstreamWith((req, res) => {
      req.resume()
      req.on('end', () => {
        res.writeEarlyHints({ link: '</style.css>; rel=preload; as=style' })
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON_BODY)
      })
    })
    const s = await burnrateFor(up.url)
    const res = await postJson(`${s.url}/v1/chat/completions`, CHAT)
    expect(res.status).toBe(200)
    expect(res.json().usage).toBeDefined()
    const row = await eventually(() => rows(s.dbFile)[0])
    expect(row).toMatchObject({ status: 200, error: null })
    expect(row.input_tokens).toBeGreaterThan(0)
    expect(row.cost_usd).toBeGreaterThan(0)
  })

  it('forwards HTTP trailers', async () => {
    const up = await upstreamWith((req, res) => {
      req.resume()
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'application/json', trailer: 'x-checksum' })
        res.write(JSON_BODY)
        res.addTrailers({ 'x-checksum': 'abc123' })
        res.end()
      })
    })
    const s = await burnrateFor(up.url)
    const trailers = await new Promise<NodeJS.Dict<string>>((resolve, reject) => {
      const req = http.request(`${s.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' } }, (res) => {
        res.resume()
        res.on('end', () => resolve(res.trailers))
      })
      req.on('error', reject)
      req.end(JSON.stringify(CHAT))
    })
    expect(trailers['x-checksum']).toBe('abc123')
  })

  /** An upstream that answers the first request of each connection (announcing no keep-alive timeout), then closes the connection under the next one, once it has read it. */
  async function closingUnderTheNext(answer: Buffer) {
    const served = new WeakSet<Socket>()
    const seen = { connections: 0, requests: 0 }
    const up = await upstreamWith((req, res) => {
      req.resume()
      req.on('end', () => {
        seen.requests++
        if (served.has(req.socket)) {
          req.socket.destroy()
          return
        }
        served.add(req.socket)
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': answer.length }).end(answer)
      })
    })
    up.server.keepAliveTimeout = 60_000
    up.server.on('connection', () => seen.connections++)
    return { up, seen }
  }

  it('a kept-alive connection the upstream closed under the next GET: sent again once on a fresh connection, 200', async () => {
    const MODELS = Buffer.from(JSON.stringify({ object: 'list', data: [{ id: 'gpt-4o-mini', object: 'model' }] }))
    const { up, seen } = await closingUnderTheNext(MODELS)
    const s = await burnrateFor(up.url)
    expect((await request(`${s.url}/v1/models`)).status).toBe(200)
    const second = await request(`${s.url}/v1/models`)
    expect(second.status).toBe(200)
    expect(second.body.equals(MODELS)).toBe(true)
    expect(seen).toEqual({ requests: 3, connections: 2 })
  })

  it('a kept-alive connection that drops under a POST the upstream read whole: never sent again (it may be billed), 502 recorded once', async () => {
    // The upstream had the whole request: it may have billed it (or created the batch) before the
    // connection dropped. Sent again, a second one would be billed and recorded nowhere.
    const { up, seen } = await closingUnderTheNext(JSON_BODY)
    const s = await burnrateFor(up.url)
    expect((await postJson(`${s.url}/v1/chat/completions`, CHAT)).status).toBe(200)
    const second = await postJson(`${s.url}/v1/chat/completions`, CHAT)
    expect(second.status).toBe(502)
    expect(seen).toEqual({ requests: 2, connections: 1 })
    const recorded = await eventually(() => (rows(s.dbFile).length === 2 ? rows(s.dbFile) : undefined))
    expect(recorded!.map((r) => r.status)).toEqual([200, 502])
  })

  it('a fresh connection closed before any answer: not sent again, and the message says it was closed, not unreachable', async () => {
    let requests = 0
    const up = await upstreamWith((req) => {
      requests++
      req.socket.destroy()
    })
    const s = await burnrateFor(up.url)
    const res = await postJson(`${s.url}/v1/chat/completions`, CHAT)
    expect(res.status).toBe(502)
    const message: string = res.json().error.message
    expect(message).toMatch(/closed the connection before answering/)
    expect(message).not.toMatch(/Could not reach/)
    expect(requests).toBe(1)
    expect(await eventually(() => rows(s.dbFile)[0])).toMatchObject({ status: 502, error: 'upstream_unreachable: CONNECTION_CLOSED' })
  })

  it('a body over the limit is refused with 413 and recorded like other refusals', async () => {
    const up = await upstreamWith((_req, res) => res.end('{}'))
    const s = await burnrateFor(up.url)
    const status = await new Promise<number>((resolve, reject) => {
      const req = http.request(`${s.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', 'content-length': String(200 * 1024 * 1024), authorization: 'Bearer sk-too-big-0000000000001' } }, (res) => {
        res.resume()
        resolve(res.statusCode ?? 0)
      })
      req.on('error', reject)
      req.write('{"model":"gpt-4o-mini"')
    })
    expect(status).toBe(413)
    expect(await eventually(() => rows(s.dbFile)[0])).toMatchObject({ status: 413, error: 'payload_too_large', cost_usd: 0, provider: 'openai' })
  })
})
