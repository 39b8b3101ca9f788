import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import WebSocket from 'ws'
import { eventually } from '../support/http'
import { ledgerRows } from '../support/ledger-rows'
import { openSocket, rowsAfter, serverOverWsUpstream } from '../support/ws-sessions'

/**
 * Azure OpenAI's Realtime API (`/openai/realtime?api-version=…&deployment=…`, and the v1 API's
 * `/openai/v1/realtime?model=…`) and xAI's voice agent API (`/v1/realtime`, OpenAI's Realtime
 * events) through the relay: metered and gated as OpenAI's Realtime socket is (README: WebSockets),
 * under provider `azure` and `xai`. The upstream replays the server events of
 * test/fixtures/openai-realtime (the Azure and xAI sessions speak the same events; their session
 * events here name no model, so the call's model is the upgrade's deployment or `model`).
 */

const events = (name: string) => readFileSync(join(__dirname, '../fixtures/openai-realtime', name), 'utf8').trim().split('\n')
const GA = events('ga-server-vad-turn.jsonl')
const BETA = events('beta-response-create.jsonl')

/** A session event without its `model` (what a session that does not say its model sends). */
function withoutModel(frame: string): string {
  const f = JSON.parse(frame)
  delete f.session.model
  return JSON.stringify(f)
}

/** Every upgrade the upstream got: its path and query, and the key headers it came with. */
const seen: { url: string; apiKey: string; authorization: string; frames: any[] }[] = []
const s = serverOverWsUpstream(
  {
    onConnection: (ws, req) => {
      const me = { url: req.url ?? '', apiKey: String(req.headers['api-key'] ?? ''), authorization: String(req.headers.authorization ?? ''), frames: [] as any[] }
      seen.push(me)
      // Azure's preview API speaks the beta interface (a response.create answered); the v1 API and
      // xAI the GA one (server VAD: the user's speech ends and the server answers by itself).
      const beta = me.url.startsWith('/openai/realtime')
      const script = beta ? [withoutModel(BETA[0]), ...BETA.slice(1)] : [withoutModel(GA[0]), withoutModel(GA[1]), ...GA.slice(2)]
      if (me.url.startsWith('/v1/realtime')) ws.send(JSON.stringify({ type: 'conversation.created', event_id: 'event_X0', conversation: { id: 'conv_X', object: 'realtime.conversation' } }))
      ws.send(script[0])
      ws.on('message', (data) => {
        const f = JSON.parse(String(data))
        me.frames.push(f)
        if (beta && f.type === 'response.create') for (const e of script.slice(1)) ws.send(e)
        if (!beta && f.type === 'session.update') ws.send(script[1])
        if (!beta && f.type === 'input_audio_buffer.append' && f.audio === 'END') for (const e of script.slice(2)) ws.send(e)
        // A response that begins and streams, and never ends.
        if (!beta && f.type === 'response.create' && f.event_id === 'evt_hang') {
          ws.send(JSON.stringify({ type: 'response.created', event_id: 'event_H1', response: { object: 'realtime.response', id: 'resp_hang', status: 'in_progress', output: [], usage: null } }))
          ws.send(JSON.stringify({ type: 'response.output_audio_transcript.delta', event_id: 'event_H2', response_id: 'resp_hang', item_id: 'item_h', output_index: 0, content_index: 0, delta: 'Hello there, how can I help?' }))
        }
      })
    },
  },
  {
    providers: { azure: { deployments: { 'rt-east': 'gpt-4o-realtime-preview-2024-12-17' } } },
    budgets: {
      rules: [
        { api_key_pattern: 'sk-blocked-*', daily_limit_usd: 0, action: 'block' },
        { api_key_pattern: 'sk-rpm-*', requests_per_minute: 1, action: 'block' },
      ],
    },
  },
)

/** The upgrade's HTTP answer, for one that is refused. */
function refusedUpgrade(path: string, headers: Record<string, string>): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`${s.t.url.replace('http', 'ws')}${path}`, { headers })
    ws.on('unexpected-response', (_req, res) => {
      const parts: Buffer[] = []
      res.on('data', (d: Buffer) => parts.push(d))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(parts).toString()) }))
    })
    ws.on('open', () => reject(new Error('opened')))
    ws.on('error', () => {})
  })
}

describe('an Azure OpenAI Realtime socket', () => {
  it('preview API (?deployment=): its response and transcription are recorded under azure, the deployment priced as the model it maps to', async () => {
    const before = ledgerRows(s.t.dbFile).length
    const c = await openSocket(s.t, '/azure/openai/realtime?api-version=2024-10-01-preview&deployment=rt-east', { headers: { 'api-key': 'sk-azure-realtime-0001' } })
    c.ws.send(JSON.stringify({ type: 'response.create', event_id: 'evt_1' }))
    const rows = await rowsAfter(s.t, before, 2)
    c.ws.close()
    const byEndpoint = Object.fromEntries(rows.map((r) => [r.endpoint, r]))
    expect(byEndpoint.realtime).toMatchObject({ provider: 'azure', status: 200, model: 'gpt-4o-realtime-preview-2024-12-17', input_tokens: 1_204, cache_read_tokens: 1_024, output_tokens: 262, estimated: 0, priced: 1, key_hint: expect.stringContaining('0001') })
    // gpt-4o-realtime-preview on Azure: text $5/M (cached $2.50/M), audio $40/M; output text $20/M, audio $80/M.
    expect(byEndpoint.realtime.cost_usd).toBeCloseTo((96 * 5 + 1_024 * 2.5 + 84 * 40 + 58 * 20 + 204 * 80) / 1e6, 15)
    expect(byEndpoint['realtime.transcription']).toMatchObject({ provider: 'azure', status: 200, model: 'whisper-1' })
    expect(seen.at(-1)).toMatchObject({ url: '/openai/realtime?api-version=2024-10-01-preview&deployment=rt-east', apiKey: 'sk-azure-realtime-0001' })
  })

  it('v1 API (?model=<deployment>, Authorization: Bearer): a response the server starts is recorded under azure at its usage', async () => {
    const before = ledgerRows(s.t.dbFile).length
    const c = await openSocket(s.t, '/azure/openai/v1/realtime?model=gpt-realtime', { headers: { authorization: 'Bearer sk-azure-realtime-0002' } })
    c.ws.send(JSON.stringify({ type: 'input_audio_buffer.append', audio: 'END' }))
    const rows = await rowsAfter(s.t, before, 2)
    c.ws.close()
    const byEndpoint = Object.fromEntries(rows.map((r) => [r.endpoint, r]))
    expect(byEndpoint.realtime).toMatchObject({ provider: 'azure', status: 200, model: 'gpt-realtime', input_tokens: 132, cache_read_tokens: 64, output_tokens: 121, estimated: 0, priced: 1 })
    expect(byEndpoint.realtime.cost_usd).toBeGreaterThan(0)
    expect(seen.at(-1)).toMatchObject({ url: '/openai/v1/realtime?model=gpt-realtime', authorization: 'Bearer sk-azure-realtime-0002' })
  })

  it('a key over its block limit is refused the socket (429, recorded under azure), the upstream never asked', async () => {
    const before = ledgerRows(s.t.dbFile).length
    const sockets = seen.length
    const answer = await refusedUpgrade('/azure/openai/realtime?api-version=2024-10-01-preview&deployment=rt-east', { 'api-key': 'sk-blocked-azure-0001' })
    expect(answer).toMatchObject({ status: 429, body: { error: { type: 'budget_exceeded' } } })
    const [row] = await rowsAfter(s.t, before, 1)
    expect(row).toMatchObject({ provider: 'azure', endpoint: 'realtime', model: 'gpt-4o-realtime-preview-2024-12-17', status: 429, cost_usd: 0 })
    expect(seen.length).toBe(sockets)
  })

  it('a socket naming its deployment twice is refused (400), as one naming its model twice: the budgets would read the first, Azure may run the other', async () => {
    const sockets = seen.length
    const answer = await refusedUpgrade('/azure/openai/realtime?api-version=2024-10-01-preview&deployment=rt-east&deployment=rt-big', { 'api-key': 'sk-azure-realtime-0009' })
    expect(answer).toMatchObject({ status: 400, body: { error: { type: 'invalid_request' } } })
    expect(seen.length).toBe(sockets)
  })

  it("a response.create past the key's per-minute rate is answered with an error event and not sent upstream", async () => {
    const before = ledgerRows(s.t.dbFile).length
    const c = await openSocket(s.t, '/azure/openai/realtime?api-version=2024-10-01-preview&deployment=rt-east', { headers: { 'api-key': 'sk-rpm-azure-0001' } })
    c.ws.send(JSON.stringify({ type: 'response.create', event_id: 'evt_1' }))
    await eventually(() => c.frames.some((f) => f.type === 'response.done'), 10_000)
    c.ws.send(JSON.stringify({ type: 'response.create', event_id: 'evt_2' }))
    await eventually(() => c.frames.some((f) => f.type === 'error'), 10_000)
    expect(c.frames.find((f) => f.type === 'error')).toMatchObject({ status: 429, error: { event_id: 'evt_2' } })
    const rows = await rowsAfter(s.t, before, 3)
    expect(rows.filter((r) => r.endpoint === 'realtime').map((r) => [r.provider, r.status])).toEqual([
      ['azure', 200],
      ['azure', 429],
    ])
    expect(seen.at(-1)!.frames.map((f) => f.event_id)).toEqual(['evt_1'])
    c.ws.close()
  })
})

describe("an xAI voice agent socket (wss://api.x.ai/v1/realtime)", () => {
  it('a response is recorded under xai with its exact tokens, at the model of the upgrade, unpriced (its price data has no token prices)', async () => {
    const before = ledgerRows(s.t.dbFile).length
    const c = await openSocket(s.t, '/xai/v1/realtime?model=grok-voice-think-fast-1.0', { headers: { authorization: 'Bearer xai-realtime-0001', 'x-burnrate-agent': 'phone-bot' } })
    c.ws.send(JSON.stringify({ type: 'input_audio_buffer.append', audio: 'END' }))
    const rows = await rowsAfter(s.t, before, 2)
    c.ws.close()
    const byEndpoint = Object.fromEntries(rows.map((r) => [r.endpoint, r]))
    expect(byEndpoint.realtime).toMatchObject({ provider: 'xai', agent: 'phone-bot', status: 200, model: 'grok-voice-think-fast-1.0', input_tokens: 132, cache_read_tokens: 64, output_tokens: 121, estimated: 0, priced: 0, cost_usd: 0 })
    // xAI bills the session by its minutes: the tokens are kept, marked so, and stay unpriced when re-priced.
    expect(JSON.parse(byEndpoint.realtime.usage_extra)).toMatchObject({ billed_by_time: true, extra: { input_audio_tokens: 13, output_audio_tokens: 91 } })
    expect(seen.at(-1)).toMatchObject({ url: '/v1/realtime?model=grok-voice-think-fast-1.0', authorization: 'Bearer xai-realtime-0001' })
  })

  it('a response cut by the client before any usage is recorded 499, estimated, and still unpriced (never $0 at a token price)', async () => {
    const before = ledgerRows(s.t.dbFile).length
    const c = await openSocket(s.t, '/xai/v1/realtime?model=grok-voice-think-fast-1.0', { headers: { authorization: 'Bearer xai-realtime-0002' } })
    c.ws.send(JSON.stringify({ type: 'response.create', event_id: 'evt_hang' }))
    await eventually(() => c.frames.some((f) => f.type === 'response.output_audio_transcript.delta'), 10_000)
    c.ws.close()
    const [row] = await rowsAfter(s.t, before, 1)
    expect(row).toMatchObject({ provider: 'xai', endpoint: 'realtime', model: 'grok-voice-think-fast-1.0', status: 499, estimated: 1, priced: 0, cost_usd: 0 })
    expect(JSON.parse(row.usage_extra)).toMatchObject({ billed_by_time: true })
  })

  it('a key over its block limit is refused the socket (429, recorded under xai), the upstream never asked', async () => {
    const before = ledgerRows(s.t.dbFile).length
    const sockets = seen.length
    const answer = await refusedUpgrade('/xai/v1/realtime?model=grok-voice-think-fast-1.0', { authorization: 'Bearer sk-blocked-xai-0001' })
    expect(answer).toMatchObject({ status: 429, body: { error: { type: 'budget_exceeded' } } })
    const [row] = await rowsAfter(s.t, before, 1)
    expect(row).toMatchObject({ provider: 'xai', endpoint: 'realtime', model: 'grok-voice-think-fast-1.0', status: 429, cost_usd: 0 })
    expect(seen.length).toBe(sockets)
  })
})
