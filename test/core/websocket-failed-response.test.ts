import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import WebSocket from 'ws'
import { fixture } from '../support/fixtures'
import { eventually, request } from '../support/http'
import { type TestServer, startTestServer } from '../support/server'
import { ledgerRows } from '../support/ledger-rows'
import { type WsUpstream, startWsUpstream } from '../support/ws-upstream'

/**
 * A response that fails after it began, on Codex's WebSocket and over HTTP: the upstream sends
 * `response.created`, then `error`, then (usually) `response.failed` with the response's usage.
 * The socket records what HTTP records for the same events: OpenAI's real `insufficient_quota`
 * refusal (test/fixtures/openai-responses/responses-stream-failed-insufficient-quota.sse) costs
 * $0 either way, not an estimate of the prompt.
 */
const SSE = fixture('openai-responses/responses-stream-failed-insufficient-quota.sse').toString()
const QUOTA = SSE.split('\n')
  .filter((l) => l.startsWith('data: '))
  .map((l) => l.slice(6))

const RESP = { id: 'resp_cut', object: 'response', model: 'gpt-4o-mini-2024-07-18', status: 'in_progress' }
/** A response whose `error` is not followed by its terminal event. */
const CUT = [
  JSON.stringify({ type: 'response.created', sequence_number: 0, response: RESP }),
  JSON.stringify({ type: 'response.output_text.delta', sequence_number: 1, item_id: 'msg_1', output_index: 0, content_index: 0, delta: 'partial answer' }),
  JSON.stringify({ type: 'error', status: 500, sequence_number: 2, error: { type: 'server_error', message: 'The server had an error' } }),
]
const USAGE = { input_tokens: 1000, input_tokens_details: { cached_tokens: 0 }, output_tokens: 50, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 1050 }
const ANSWER = [
  JSON.stringify({ type: 'response.created', sequence_number: 0, response: { ...RESP, id: 'resp_ok' } }),
  JSON.stringify({ type: 'response.completed', sequence_number: 1, response: { ...RESP, id: 'resp_ok', status: 'completed', usage: USAGE } }),
]
const framesFor = (text: string): string[] => (text.includes('quota') ? QUOTA : text.includes('cut') ? CUT : ANSWER)

let up: WsUpstream
let t: TestServer

beforeAll(async () => {
  up = await startWsUpstream({
    onRequest: (req, res) => {
      req.resume()
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'text/event-stream' })
        res.end(SSE)
      })
    },
    onConnection: (ws) => {
      ws.on('message', (data) => {
        const text = String(data)
        if (JSON.parse(text).type === 'response.create') for (const f of framesFor(text)) ws.send(f)
      })
    },
  })
  t = await startTestServer({}, up.url)
})
afterAll(async () => {
  await t.cleanup()
  await up.close()
})

function rows(): any[] {
  return ledgerRows(t.dbFile)
}

function open(key: string): Promise<{ ws: WebSocket; frames: string[] }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`${t.url.replace('http', 'ws')}/v1/responses`, { headers: { authorization: `Bearer ${key}`, 'user-agent': 'codex_exec/0.169.0' } })
    const frames: string[] = []
    ws.on('message', (d) => frames.push(String(d)))
    ws.on('open', () => resolve({ ws, frames }))
    ws.on('error', reject)
  })
}

const body = (text: string) => ({ model: 'gpt-4o-mini', input: [{ role: 'user', content: [{ type: 'input_text', text }] }], stream: true })
const PROMPT = 'quota '.repeat(4000)
const SAME = ['status', 'error', 'input_tokens', 'output_tokens', 'cost_usd', 'estimated'] as const
const pick = (r: any) => Object.fromEntries(SAME.map((k) => [k, r[k]]))

describe('a Responses WebSocket call whose response fails after it began', () => {
  it("is recorded as HTTP records the same events: OpenAI's insufficient_quota refusal at 0 tokens, $0", async () => {
    const before = rows().length
    const r = await request(`${t.url}/v1/responses`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer sk-test-quota-http' },
      body: JSON.stringify(body(PROMPT)),
    })
    expect(r.status).toBe(200)
    const viaHttp = await eventually(() => rows()[before], 10_000)

    const c = await open('sk-test-quota-ws')
    c.ws.send(JSON.stringify({ type: 'response.create', ...body(PROMPT) }))
    await eventually(() => c.frames.length === QUOTA.length, 10_000)
    const viaWs = await eventually(() => rows()[before + 1], 10_000)
    c.ws.close()

    expect(pick(viaHttp)).toEqual({ status: 200, error: 'insufficient_quota', input_tokens: 0, output_tokens: 0, cost_usd: 0, estimated: 0 })
    expect(pick(viaWs)).toEqual(pick(viaHttp))
    expect(viaWs.endpoint).toBe('responses')
  })

  it('without its terminal event, is metered as a cut stream with its error when the next response begins; that one is its own call', async () => {
    const before = rows().length
    const c = await open('sk-test-cut-next')
    c.ws.send(JSON.stringify({ type: 'response.create', ...body('cut here') }))
    await eventually(() => c.frames.length === CUT.length, 10_000)
    c.ws.send(JSON.stringify({ type: 'response.create', ...body('and now answer') }))
    await eventually(() => c.frames.length === CUT.length + ANSWER.length, 10_000)
    const got = (await eventually(() => {
      const r = rows().slice(before)
      return r.length === 2 ? r : undefined
    }, 10_000)) as any[]
    c.ws.close()
    // (The estimate is written after the second call's row: found by the response's id.)
    const cut = got.find((r) => r.response_id === 'resp_cut')
    expect(cut).toMatchObject({ status: 200, error: 'server_error', estimated: 1 })
    expect(cut.input_tokens).toBeGreaterThan(0)
    expect(cut.output_tokens).toBeGreaterThan(0)
    expect(cut.cost_usd).toBeGreaterThan(0)
    expect(got.find((r) => r.response_id === 'resp_ok')).toMatchObject({ status: 200, error: null, estimated: 0, input_tokens: 1000, output_tokens: 50 })
  })

  it('without its terminal event, is metered as a cut stream with its error when the socket closes (not as abandoned)', async () => {
    const before = rows().length
    const c = await open('sk-test-cut-close')
    c.ws.send(JSON.stringify({ type: 'response.create', ...body('cut here') }))
    await eventually(() => c.frames.length === CUT.length, 10_000)
    c.ws.close()
    const r = await eventually(() => rows()[before], 10_000)
    expect(r).toMatchObject({ status: 200, error: 'server_error', estimated: 1, response_id: 'resp_cut' })
    expect(r.cost_usd).toBeGreaterThan(0)
  })
})
