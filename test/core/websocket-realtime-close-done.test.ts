import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { hashKey } from '../../src/main/proxy/attribution'
import { eventually } from '../support/http'
import { keyRowsAtLeast, openSocket, rowsOfKey, serverOverWsUpstream } from '../support/ws-sessions'

/**
 * A Realtime API response under way when the client closes the socket (README: WebSockets): the
 * relay passes the close on and holds the response's record until the upstream answers it. A
 * `response.done` that arrives in that while is the response's bill (OpenAI's usage, not an
 * estimate), recorded once, 499 as the client left; without one, the estimate is recorded at the
 * upstream's close, or after upstream.connect_timeout_ms if the upstream never answers.
 */

const GA = readFileSync(join(__dirname, '../fixtures/openai-realtime/ga-server-vad-turn.jsonl'), 'utf8').trim().split('\n')

/** The response's end, as OpenAI sends it after the client asked to close: 500 text tokens in (200 cached), 120 out (80 of them audio). */
const done = (id: string) =>
  JSON.stringify({
    type: 'response.done',
    event_id: `event_${id}_done`,
    response: {
      object: 'realtime.response',
      id,
      status: 'cancelled',
      status_details: { type: 'cancelled', reason: 'client_cancelled' },
      output: [],
      usage: {
        total_tokens: 620,
        input_tokens: 500,
        output_tokens: 120,
        input_token_details: { text_tokens: 500, audio_tokens: 0, image_tokens: 0, cached_tokens: 200, cached_tokens_details: { text_tokens: 200, audio_tokens: 0, image_tokens: 0 } },
        output_token_details: { text_tokens: 40, audio_tokens: 80 },
      },
    },
  })
/** gpt-realtime: text in $4/M, cached $0.40/M, text out $16/M, audio out $64/M. */
const DONE_COST = (300 * 4 + 200 * 0.4 + 40 * 16 + 80 * 64) / 1e6

/** The upstream's side of each socket once its response has begun: it reads nothing more until told to. */
let held: ((h: Held) => void) | null = null
interface Held {
  send: (frame: string) => void
  raw: any
  closed: Promise<void>
}

const s = serverOverWsUpstream(
  {
    onConnection: (ws) => {
      ws.send(GA[0])
      const closed = new Promise<void>((r) => ws.on('close', () => r()))
      ws.on('message', (data) => {
        const f = JSON.parse(String(data))
        if (f.type !== 'response.create') return
        const id = `resp_${f.event_id}`
        ws.send(JSON.stringify({ type: 'response.created', event_id: `event_${id}`, response: { object: 'realtime.response', id, status: 'in_progress', output: [], usage: null } }))
        ws.send(JSON.stringify({ type: 'response.output_audio.delta', event_id: `event_${id}_d`, response_id: id, item_id: 'item_1', output_index: 0, content_index: 0, delta: 'AAAA' }))
        // The response is generating: the provider reads nothing meanwhile (the relay's close frame waits unread).
        const raw = (ws as any)._socket
        raw.pause()
        held?.({ send: (frame) => ws.send(frame), raw, closed })
      })
    },
  },
  { upstream: { connect_timeout_ms: 1_000 } },
)

/** A socket whose response has begun, then closed by the client; resolves once the upstream holds the close frame unread. */
async function closedMidResponse(key: string, eventId: string): Promise<Held> {
  const upstreamHeld = new Promise<Held>((r) => (held = r))
  const { ws, frames, closed } = await openSocket(s.t, '/v1/realtime?model=gpt-realtime', { headers: { authorization: `Bearer ${key}` } })
  await eventually(() => frames.some((f) => f.type === 'session.created'), 10_000)
  ws.send(JSON.stringify({ type: 'response.create', event_id: eventId }))
  const upstream = await upstreamHeld
  await eventually(() => frames.some((f) => f.type === 'response.output_audio.delta'), 10_000)
  ws.close(1000)
  expect((await closed).code).toBe(1000)
  // The relay's close frame has reached the upstream (unread): the client's close has been seen.
  await eventually(() => upstream.raw.readableLength > 0, 10_000)
  return upstream
}

describe('a Realtime API response the client closed the socket on', () => {
  it("is recorded with the response.done's usage when it arrives before the upstream answers the close: once, 499, its cost in the budgets", async () => {
    const key = 'sk-test-rt-close-done-0001'
    const upstream = await closedMidResponse(key, 'evt_a')
    upstream.send(done('resp_evt_a'))
    upstream.raw.resume()
    await upstream.closed
    const [row] = await keyRowsAtLeast(s.t, key, 1)
    expect(row).toMatchObject({ endpoint: 'realtime', model: 'gpt-realtime', status: 499, error: 'client_aborted', estimated: 0, priced: 1, input_tokens: 500, cache_read_tokens: 200, output_tokens: 120 })
    expect(row.cost_usd).toBeCloseTo(DONE_COST, 15)
    expect(rowsOfKey(s.t, key)).toHaveLength(1)
    expect(s.t.server.ledger.spend.key(hashKey(key)).day).toBeCloseTo(DONE_COST, 15)
    // No call of the socket's is left under way.
    expect(await s.t.server.proxy.drain(5_000)).toBe(true)
  })

  it('without a response.done, keeps the estimate: recorded once, after upstream.connect_timeout_ms if the upstream never answers the close', async () => {
    const key = 'sk-test-rt-close-done-0002'
    const upstream = await closedMidResponse(key, 'evt_b')
    // The upstream stays silent: the hold ends on its own.
    const [row] = await keyRowsAtLeast(s.t, key, 1)
    expect(row).toMatchObject({ endpoint: 'realtime', model: 'gpt-realtime', status: 499, error: 'client_aborted', estimated: 1 })
    // A response.done later still (past the hold) is not a second record.
    upstream.send(done('resp_evt_b'))
    upstream.raw.resume()
    await upstream.closed
    expect(rowsOfKey(s.t, key)).toHaveLength(1)
    expect(s.t.server.ledger.spend.key(hashKey(key)).day).toBeCloseTo(row.cost_usd, 15)
    expect(await s.t.server.proxy.drain(5_000)).toBe(true)
  })
})
