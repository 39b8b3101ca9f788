import http from 'node:http'
import net from 'node:net'
import { calcPrice } from '@pydantic/genai-prices'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import WebSocket from 'ws'
import { eventually } from '../support/http'
import { type TestServer, startTestServer } from '../support/server'
import { ledgerRows } from '../support/ledger-rows'
import { type WsUpstream, startWsUpstream } from '../support/ws-upstream'

/**
 * Codex's built-in OpenAI provider first upgrades `GET /v1/responses` to a WebSocket. Burnrate
 * passes the upgrade through, relays frames unchanged both ways, and records each response on
 * the socket as its own call, attributed like any other; a budget refusal is an error frame
 * that Codex reports without retrying, and the frame never reaches the upstream.
 */

const THREAD = '01a207ca-e8ad-7d21-b957-ad94c2eef955'
const CODEX = {
  'user-agent': 'codex_exec/0.169.0 (Debian 12.0.0; x86_64) xterm (codex_exec; 0.169.0)',
  originator: 'codex_exec',
  'session-id': THREAD,
  'thread-id': THREAD,
}

interface Seen {
  headers: http.IncomingHttpHeaders
  frames: { data: Buffer; binary: boolean }[]
  ws: WebSocket
}

let up: WsUpstream
const seen: Seen[] = []
let refuseUpgrade = false
let t: TestServer

/** The frames the mock answers a response.create with; usage differs per response. */
function answerFrames(n: number): string[] {
  const usage = { input_tokens: 1000 + n, input_tokens_details: { cached_tokens: 200 }, output_tokens: 50 + n, output_tokens_details: { reasoning_tokens: 10 }, total_tokens: 1050 + 2 * n }
  const resp = { id: `resp_${n}`, object: 'response', model: 'gpt-4o-mini-2024-07-18', status: 'in_progress' }
  return [
    JSON.stringify({ type: 'response.created', sequence_number: 0, response: resp }),
    JSON.stringify({ type: 'response.output_text.delta', sequence_number: 1, item_id: 'msg_1', output_index: 0, content_index: 0, delta: 'héllo' }),
    JSON.stringify({ type: 'response.completed', sequence_number: 2, response: { ...resp, status: 'completed', usage } }),
  ]
}

/** A response that searched the web twice and opened a page (not billed), then answered. */
function searchFrames(): string[] {
  const usage = { input_tokens: 4000, input_tokens_details: { cached_tokens: 0 }, output_tokens: 300, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 4300 }
  const resp = { id: 'resp_search', object: 'response', model: 'gpt-4o-mini-2024-07-18', status: 'in_progress' }
  const output = [
    { type: 'web_search_call', id: 'ws_1', status: 'completed', action: { type: 'search', query: 'burnrate' } },
    { type: 'web_search_call', id: 'ws_2', status: 'completed', action: { type: 'open_page', url: 'https://example.com' } },
    { type: 'web_search_call', id: 'ws_3', status: 'completed', action: { type: 'search', query: 'burnrate proxy' } },
    { type: 'message', id: 'msg_1', status: 'completed', role: 'assistant', content: [{ type: 'output_text', text: 'found it' }] },
  ]
  return [
    JSON.stringify({ type: 'response.created', sequence_number: 0, response: resp }),
    JSON.stringify({ type: 'response.completed', sequence_number: 1, response: { ...resp, status: 'completed', output, usage } }),
  ]
}

/** What the upstream sends for a turn it refuses (Codex reads it as the HTTP error it stands for), or fails midway. */
const ERRORS: Record<string, string[]> = {
  'rate limited': [JSON.stringify({ type: 'error', status: 429, error: { type: 'usage_limit_reached', message: 'The usage limit has been reached' } })],
  'too long': [JSON.stringify({ type: 'error', status: 400, error: { type: 'invalid_request_error', code: 'context_length_exceeded', message: 'too long' } })],
  'fail midway': [
    answerFrames(9)[0],
    answerFrames(9)[1],
    JSON.stringify({ type: 'error', status: 500, error: { type: 'server_error', message: 'The server had an error' } }),
  ],
}
const scripted = (text: string) => Object.entries(ERRORS).find(([marker]) => text.includes(marker))?.[1]

beforeAll(async () => {
  up = await startWsUpstream({
    onRequest: (_req, res) => {
      res.writeHead(404, { 'content-type': 'application/json' })
      res.end('{"error":{"message":"plain GET"}}')
    },
    headers: () => ['x-codex-turn-state: turn-abc'],
    // The last subprotocol offered, or none when 'none-please' is.
    handleProtocols: (offered) => (offered.has('none-please') ? false : [...offered].at(-1)!),
    refuse: (_req, socket) => {
      if (refuseUpgrade) socket.end('HTTP/1.1 404 Not Found\r\ncontent-type: application/json\r\ncontent-length: 28\r\n\r\n{"error":{"message":"nope"}}')
      return refuseUpgrade
    },
    onConnection: (ws, req) => {
      const s: Seen = { headers: req.headers, frames: [], ws }
      seen.push(s)
      let n = 0
      ws.on('message', (data, binary) => {
        s.frames.push({ data: data as Buffer, binary })
        if (binary) {
          ws.send(data, { binary: true })
          return
        }
        let frame: any
        try {
          frame = JSON.parse(String(data))
        } catch {
          return
        }
        if (frame.type !== 'response.create') return
        // 'break the protocol': the response begins, then a text frame that is not UTF-8 (FIN+text, 2 bytes).
        if (frame.input === 'break the protocol') {
          ws.send(answerFrames(8)[0])
          return void (ws as any)._socket.write(Buffer.from([0x81, 0x02, 0xff, 0xfe]))
        }
        // 'hold' gets only its first frame: the response stays open.
        const frames = scripted(String(data)) ?? (String(data).includes('search the web') ? searchFrames() : answerFrames(++n))
        for (const f of frame.input === 'hold' ? frames.slice(0, 1) : frames) ws.send(f)
      })
    },
  })
  t = await startTestServer({ budgets: { rules: [{ api_key_pattern: 'sk-blocked-*', daily_limit_usd: 0, action: 'block' }] } }, up.url)
})
afterAll(async () => {
  await t.cleanup()
  await up.close()
})

function rows(): any[] {
  return ledgerRows(t.dbFile)
}

function open(key: string): Promise<{ ws: WebSocket; headers: http.IncomingHttpHeaders; frames: string[] }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`${t.url.replace('http', 'ws')}/v1/responses`, { headers: { ...CODEX, authorization: `Bearer ${key}`, 'openai-beta': 'responses_websockets=2026-02-06' } })
    const frames: string[] = []
    let headers: http.IncomingHttpHeaders = {}
    ws.on('upgrade', (res) => (headers = res.headers))
    ws.on('message', (d) => frames.push(String(d)))
    ws.on('open', () => resolve({ ws, headers, frames }))
    ws.on('error', reject)
    ws.on('unexpected-response', (_req, res) => reject(new Error(`upgrade answered ${res.statusCode}`)))
  })
}

const create = (input: string) => JSON.stringify({ type: 'response.create', model: 'gpt-4o-mini', input: [{ role: 'user', content: [{ type: 'input_text', text: input }] }], stream: true })

describe('WebSocket upgrades of GET /v1/responses', () => {
  it('are passed through; frames go both ways unchanged; each response is its own call, attributed and priced', async () => {
    const before = rows().length
    const c = await open('sk-test-websocket-key-0001')
    expect(c.headers['x-codex-turn-state']).toBe('turn-abc')
    const first = create('first ✓')
    c.ws.send(first)
    await eventually(() => c.frames.length === 3, 10_000)
    const second = create('second')
    c.ws.send(second)
    const bin = Buffer.from([0, 1, 2, 255])
    c.ws.send(bin)
    await eventually(() => c.frames.length === 7, 10_000)
    c.ws.close()

    const up = seen[seen.length - 1]
    expect(up.headers.authorization).toBe('Bearer sk-test-websocket-key-0001')
    expect(up.headers['thread-id']).toBe(THREAD)
    expect(up.headers['openai-beta']).toBe('responses_websockets=2026-02-06')
    expect(up.frames.map((f) => [String(f.data), f.binary])).toEqual([
      [first, false],
      [second, false],
      [bin.toString(), true],
    ])
    expect(up.frames[2].data.equals(bin)).toBe(true)
    expect(c.frames.slice(0, 3)).toEqual(answerFrames(1))
    expect(c.frames.slice(3, 6)).toEqual(answerFrames(2))

    const got = (await eventually(() => {
      const r = rows().slice(before)
      return r.length === 2 ? r : undefined
    }, 10_000)) as any[]
    for (const [i, r] of got.entries()) {
      const n = i + 1
      const price = calcPrice({ input_tokens: 1000 + n, cache_read_tokens: 200, output_tokens: 50 + n }, 'gpt-4o-mini-2024-07-18', { providerId: 'openai' })!
      expect(r).toMatchObject({
        status: 200,
        error: null,
        provider: 'openai',
        endpoint: 'responses',
        model: 'gpt-4o-mini-2024-07-18',
        // The response.create named the undated model: kept for budget rules' model_pattern.
        requested_model: 'gpt-4o-mini',
        agent: 'codex',
        session: THREAD,
        streamed: 1,
        input_tokens: 1000 + n,
        cache_read_tokens: 200,
        output_tokens: 50 + n,
        reasoning_tokens: 10,
        priced: 1,
        estimated: 0,
      })
      expect(r.cost_usd).toBeCloseTo(Number(price.total_price), 12)
    }
  })

  it("a later turn sent as what is new (previous_response_id) is under the project the socket's first turn stated", async () => {
    const before = rows().length
    const c = await open('sk-test-websocket-key-0001')
    const env = { type: 'message', role: 'user', content: [{ type: 'input_text', text: '<environment_context>\n  <cwd>/home/dev/api</cwd>\n</environment_context>' }] }
    const ask = { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'add a route' }] }
    c.ws.send(JSON.stringify({ type: 'response.create', model: 'gpt-4o-mini', input: [env, ask], stream: true }))
    await eventually(() => c.frames.length === 3, 10_000)
    const out = { type: 'function_call_output', call_id: 'call_1', output: 'ok' }
    c.ws.send(JSON.stringify({ type: 'response.create', model: 'gpt-4o-mini', previous_response_id: 'resp_1', input: [out], stream: true }))
    await eventually(() => c.frames.length === 6, 10_000)
    c.ws.close()
    const got = (await eventually(() => {
      const r = rows().slice(before)
      return r.length === 2 ? r : undefined
    }, 10_000)) as any[]
    expect(got.map((r) => [r.agent, r.session, r.project])).toEqual([
      ['codex', THREAD, '/home/dev/api'],
      ['codex', THREAD, '/home/dev/api'],
    ])
  })

  it('web searches a response made are billed per search (an open_page action is not)', async () => {
    const before = rows().length
    const c = await open('sk-test-websocket-key-0002')
    c.ws.send(create('search the web'))
    await eventually(() => c.frames.length === 2, 10_000)
    c.ws.close()
    const r = (await eventually(() => rows()[before], 10_000)) as any
    expect(r).toMatchObject({ status: 200, endpoint: 'responses', input_tokens: 4000, output_tokens: 300, priced: 1 })
    const price = calcPrice({ input_tokens: 4000, output_tokens: 300, web_searches: 2 }, 'gpt-4o-mini-2024-07-18', { providerId: 'openai', timestamp: new Date(r.ts) })!
    expect(r.cost_usd).toBe(price.total_price)
    // gpt-4o-mini: $0.15/M input, $0.60/M output, and $10 per 1,000 web searches
    expect(r.cost_usd).toBeCloseTo((4000 * 0.15 + 300 * 0.6) / 1e6 + 2 * 0.01, 12)
  })

  it('a budget refusal is an error frame with status 429 that never reaches the upstream, and is recorded', async () => {
    const before = rows().length
    const framesBefore = seen.reduce((n, s) => n + s.frames.length, 0)
    const c = await open('sk-blocked-websocket-0001')
    c.ws.send(create('too dear'))
    await eventually(() => c.frames.length === 1, 10_000)
    const err = JSON.parse(c.frames[0])
    // The type Codex reports and does not retry (any other 429 it retries after Retry-After: hours).
    expect(err).toMatchObject({ type: 'error', status: 429, error: { type: 'usage_limit_reached', code: 'budget_exceeded' } })
    expect(err.error.message).toMatch(/daily limit/)
    expect(err.error.resets_at).toBeGreaterThan(Date.now() / 1000)
    expect(err.headers['x-should-retry']).toBe('false')
    c.ws.close()
    const r = await eventually(() => rows()[before], 10_000)
    expect(r).toMatchObject({ status: 429, error: 'budget_exceeded', cost_usd: 0, agent: 'codex', session: THREAD })
    expect(seen.reduce((n, s) => n + s.frames.length, 0)).toBe(framesBefore)
  })

  it('a response.create whose "type" comes after its other keys is gated and recorded like any (JSON key order means nothing)', async () => {
    // The event as an SDK may build it ({...params, type}): an input item's "type" comes first.
    const typeLast = (text: string) => JSON.stringify({ model: 'gpt-4o-mini', input: [{ type: 'message', role: 'user', content: [{ type: 'input_text', text }] }], type: 'response.create' })
    const framesBefore = seen.reduce((n, s) => n + s.frames.length, 0)
    const before = rows().length
    const blocked = await open('sk-blocked-websocket-0002')
    blocked.ws.send(typeLast('too dear'))
    await eventually(() => blocked.frames.length === 1, 10_000)
    expect(JSON.parse(blocked.frames[0])).toMatchObject({ type: 'error', status: 429, error: { code: 'budget_exceeded' } })
    const refused = await eventually(() => rows()[before], 10_000)
    blocked.ws.close()
    expect(refused).toMatchObject({ status: 429, error: 'budget_exceeded', cost_usd: 0 })
    expect(seen.reduce((n, s) => n + s.frames.length, 0)).toBe(framesBefore)

    const c = await open('sk-test-websocket-key-0004')
    c.ws.send(typeLast('allowed'))
    await eventually(() => c.frames.length === 3, 10_000)
    const r = await eventually(() => rows()[before + 1], 10_000)
    c.ws.close()
    expect(r).toMatchObject({ status: 200, endpoint: 'responses', input_tokens: 1001, output_tokens: 51, estimated: 0 })
  })

  it('a text frame that is not JSON is refused with a 400 error frame and not sent upstream (the budgets cannot read it)', async () => {
    const framesBefore = seen.reduce((n, s) => n + s.frames.length, 0)
    const before = rows().length
    const c = await open('sk-blocked-websocket-0003')
    c.ws.send('{"type":"response.create","model":"gpt-4o-mini","input":"hi",}')
    c.ws.send(create('after it'))
    await eventually(() => c.frames.length === 2, 10_000)
    expect(JSON.parse(c.frames[0])).toMatchObject({ type: 'error', status: 400, error: { type: 'invalid_request' } })
    // The socket goes on: the next create is gated (refused, under this key's $0 rule) and recorded.
    expect(JSON.parse(c.frames[1])).toMatchObject({ type: 'error', status: 429 })
    await eventually(() => rows().length === before + 1, 10_000)
    c.ws.close()
    expect(rows()[before]).toMatchObject({ status: 429, error: 'budget_exceeded' })
    expect(seen.reduce((n, s) => n + s.frames.length, 0)).toBe(framesBefore)
  })

  it('an error frame before any of the response (429, 400) is recorded with its status at $0, not an estimated prompt', async () => {
    const prompt = 'lorem ipsum dolor sit amet '.repeat(4000)
    for (const [marker, status] of [['rate limited', 429], ['too long', 400]] as const) {
      const before = rows().length
      const c = await open('sk-test-websocket-key-0003')
      c.ws.send(create(`${marker} ${prompt}`))
      await eventually(() => c.frames.length === 1, 10_000)
      expect(JSON.parse(c.frames[0])).toMatchObject({ type: 'error', status })
      const r = await eventually(() => rows()[before], 10_000)
      c.ws.close()
      expect(r).toMatchObject({ status, error: 'upstream_error', input_tokens: 0, output_tokens: 0, cost_usd: 0, estimated: 0 })
    }
  })

  it('an error frame after the response began, with no terminal event, is metered as a cut response (its prompt and output estimated)', async () => {
    const before = rows().length
    const c = await open('sk-test-websocket-key-0003')
    c.ws.send(create('fail midway'))
    await eventually(() => c.frames.length === 3, 10_000)
    // The call waits for the response's terminal event (websocket-failed-response.test.ts); none comes.
    c.ws.close()
    const r = await eventually(() => rows()[before], 10_000)
    expect(r).toMatchObject({ status: 200, error: 'server_error', estimated: 1 })
    expect(r.input_tokens).toBeGreaterThan(0)
    expect(r.cost_usd).toBeGreaterThan(0)
  })

  it('a client that closes mid-response has the call recorded 499', async () => {
    const before = rows().length
    const c = await open('sk-test-websocket-key-0002')
    c.ws.send(JSON.stringify({ type: 'response.create', model: 'gpt-4o-mini', input: 'hold' }))
    await eventually(() => c.frames.length === 1, 10_000)
    c.ws.terminate()
    const r = await eventually(() => rows()[before], 10_000)
    expect(r).toMatchObject({ status: 499, error: 'client_aborted', agent: 'codex', session: THREAD })
  })

  it('an upstream connection lost mid-response closes the client with 1014 (bad gateway), and the call is recorded 502', async () => {
    const before = rows().length
    const c = await open('sk-test-websocket-key-0003')
    const closed = new Promise<{ code: number; reason: string }>((r) => c.ws.once('close', (code, reason) => r({ code, reason: String(reason) })))
    c.ws.send(JSON.stringify({ type: 'response.create', model: 'gpt-4o-mini', input: 'hold' }))
    await eventually(() => c.frames.length === 1, 10_000)
    // The provider's socket drops without a close frame.
    seen.at(-1)!.ws.terminate()
    expect(await closed).toEqual({ code: 1014, reason: 'the provider connection was lost' })
    const r = await eventually(() => rows()[before], 10_000)
    expect(r).toMatchObject({ status: 502, error: 'upstream_reset', agent: 'codex', session: THREAD })
  })

  it('an upstream that breaks the protocol mid-response (a text frame not UTF-8) is a lost provider: client closed 1014, call 502', async () => {
    const before = rows().length
    const c = await open('sk-test-websocket-key-0004')
    const closed = new Promise<{ code: number; reason: string }>((r) => c.ws.once('close', (code, reason) => r({ code, reason: String(reason) })))
    c.ws.send(JSON.stringify({ type: 'response.create', model: 'gpt-4o-mini', input: 'break the protocol' }))
    expect(await closed).toEqual({ code: 1014, reason: 'the provider connection was lost' })
    const r = await eventually(() => rows()[before], 10_000)
    expect(r).toMatchObject({ status: 502, error: 'upstream_reset' })
  })

  it('a client that breaks the protocol mid-response (a text frame not UTF-8) has the call recorded 499, not as an upstream reset', async () => {
    const before = rows().length
    const c = await open('sk-test-websocket-key-0005')
    c.ws.on('error', () => {})
    c.ws.send(JSON.stringify({ type: 'response.create', model: 'gpt-4o-mini', input: 'hold' }))
    await eventually(() => c.frames.length === 1, 10_000)
    // A masked text frame whose payload is not UTF-8, written under the client library.
    ;(c.ws as any)._socket.write(Buffer.from([0x81, 0x82, 0, 0, 0, 0, 0xff, 0xfe]))
    const r = await eventually(() => rows()[before], 10_000)
    expect(r).toMatchObject({ status: 499, error: 'client_aborted' })
  })

  it('the client is answered the subprotocol the upstream chose, or none when the upstream accepts without choosing one', async () => {
    const connect = (protocols: string[]) =>
      new Promise<WebSocket>((resolve, reject) => {
        const ws = new WebSocket(`${t.url.replace('http', 'ws')}/v1/responses`, protocols, { headers: { ...CODEX, authorization: 'Bearer sk-test-websocket-subprotocol' } })
        ws.on('open', () => resolve(ws))
        ws.on('error', reject)
        ws.on('unexpected-response', (_req, res) => reject(new Error(`upgrade answered ${res.statusCode}`)))
      })
    const chose = await connect(['realtime', 'openai-beta.realtime-v1'])
    expect(chose.protocol).toBe('openai-beta.realtime-v1')
    expect(seen.at(-1)!.headers['sec-websocket-protocol']).toBe('realtime,openai-beta.realtime-v1')
    chose.close()
    // (The ws library, as a client, refuses an answer with none: a plain upgrade request reads it.)
    const none = await new Promise<http.IncomingMessage>((resolve, reject) => {
      const req = http.request(`${t.url}/v1/responses`, {
        headers: { ...CODEX, authorization: 'Bearer sk-test-websocket-subprotocol', connection: 'Upgrade', upgrade: 'websocket', 'sec-websocket-version': '13', 'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==', 'sec-websocket-protocol': 'realtime, none-please' },
        agent: false,
      })
      req.on('upgrade', (res, socket) => {
        socket.destroy()
        resolve(res)
      })
      req.on('response', (res) => reject(new Error(`upgrade answered ${res.statusCode}`)))
      req.on('error', reject)
      req.end()
    })
    expect(none.statusCode).toBe(101)
    expect(none.headers['sec-websocket-protocol']).toBeUndefined()
  })

  it('an upgrade request to a path that is not proxied is answered as the plain request it also is', async () => {
    const res = await new Promise<http.IncomingMessage>((resolve, reject) => {
      const req = http.request(`${t.url}/api/health`, { headers: { connection: 'Upgrade', upgrade: 'websocket' }, agent: false })
      req.on('response', resolve)
      req.on('upgrade', () => reject(new Error('upgraded')))
      req.on('error', reject)
      req.end()
    })
    const parts: Buffer[] = []
    for await (const c of res) parts.push(c as Buffer)
    expect(res.statusCode).toBe(200)
    expect(JSON.parse(Buffer.concat(parts).toString('utf8')).status).toBe('ok')
  })

  it('a client handshake refused once the upstream accepted (no Sec-WebSocket-Key) closes the upstream socket opened for it', async () => {
    const before = seen.length
    const port = Number(new URL(t.url).port)
    const answer = await new Promise<string>((resolve, reject) => {
      const s = net.connect(port, '127.0.0.1', () => {
        s.write(`GET /v1/responses HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nauthorization: Bearer sk-test-websocket-nokey\r\n\r\n`)
      })
      let got = ''
      s.on('data', (d) => (got += d))
      s.on('close', () => resolve(got))
      s.on('error', reject)
    })
    expect(answer).toMatch(/^HTTP\/1\.1 400 /)
    await eventually(() => seen.length === before + 1, 10_000)
    await eventually(() => seen[before].ws.readyState === WebSocket.CLOSED, 10_000)
  })

  it('an upstream that refuses the upgrade has its answer relayed; nothing is recorded', async () => {
    refuseUpgrade = true
    try {
      const before = rows().length
      const status = await new Promise<number>((resolve, reject) => {
        const ws = new WebSocket(`${t.url.replace('http', 'ws')}/v1/responses`, { headers: CODEX })
        ws.on('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0))
        ws.on('open', () => reject(new Error('opened')))
        ws.on('error', () => {})
      })
      expect(status).toBe(404)
      // A plain call afterwards is recorded, and is the only new row.
      const res = await fetch(`${t.url}/v1/models`)
      expect(res.status).toBe(404)
      await eventually(() => rows().length === before + 1, 10_000)
    } finally {
      refuseUpgrade = false
    }
  })
})
