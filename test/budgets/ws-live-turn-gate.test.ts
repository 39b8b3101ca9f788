import { describe, expect, it } from 'vitest'
import { eventually, request } from '../support/http'
import { fixture } from '../support/fixtures'
import { LIVE_PATH, keyRowsAtLeast, openSocket, rowsOfKey, serverOverWsUpstream } from '../support/ws-sessions'

/**
 * Gemini's Live API under a `block` rule, on a socket opened while its key was under the limit
 * (README: Budgets, WebSockets): a client frame that starts a turn (`clientContent`, a
 * `realtimeInput` text or the end of the user's activity, a `toolResponse`, the first audio after
 * a turn) is checked by the budgets, as a Responses socket's `response.create` is. Once the key's
 * turns have taken it over its limit, such a frame is refused: not sent upstream, recorded as a
 * refusal (429 `budget_exceeded`, $0, naming the rule), and the socket closed 1011 with a reason
 * naming the rule, as Google closes a socket over its quota. Before this, the turns went on
 * until the client closed the socket, each one billed past the limit.
 */

const VIDEO = fixture('gemini-live/text-video-turn.jsonl').toString('utf8').trim().split('\n')
const RULE = 'AIza-live-gate-*'
/** Under one turn's cost: gemini-3.1-flash-live-preview, 1,330 tokens in, 20 out, about $0.0014. */
const LIMIT = 0.0005

/** What the upstream got on each socket, by the key its upgrade named. */
const seen = new Map<string, any[]>()
const s = serverOverWsUpstream(
  {
    onConnection: (ws, req) => {
      const frames: any[] = []
      seen.set(new URL(req.url ?? '', 'http://x').searchParams.get('key') ?? '', frames)
      ws.on('message', (data) => {
        const f = JSON.parse(String(data))
        frames.push(f)
        if (f.setup) ws.send(Buffer.from(VIDEO[0]), { binary: true })
        // Each frame that starts a turn is answered with one: text out, its usage at its turnComplete.
        const turn = f.clientContent?.turnComplete || f.realtimeInput?.text || f.realtimeInput?.audio?.data === 'END' || f.toolResponse
        if (turn) for (const m of VIDEO.slice(1)) ws.send(Buffer.from(m), { binary: true })
      })
    },
  },
  { timezone: 'UTC', metrics: { enabled: true }, budgets: { rules: [{ api_key_pattern: RULE, daily_limit_usd: LIMIT, action: 'block' }] } },
)

async function session(key: string) {
  const c = await openSocket(s.t, `${LIVE_PATH}?key=${key}`)
  c.ws.send(JSON.stringify({ setup: { model: 'models/gemini-3.1-flash-live-preview' } }))
  await eventually(() => c.frames.some((f) => f.setupComplete), 10_000)
  return c
}

const content = (text: string) => JSON.stringify({ clientContent: { turns: [{ role: 'user', parts: [{ text }] }], turnComplete: true } })
const audio = (data: string) => JSON.stringify({ realtimeInput: { audio: { mimeType: 'audio/pcm;rate=16000', data } } })

/** The frames the upstream got on `key`'s socket, but its setup. */
const sent = (key: string) => (seen.get(key) ?? []).filter((f) => !f.setup)

let refusals = 0

/** The key's rows once its second is in: the turn, then the refusal; then the socket's close. */
async function expectRefused(key: string, c: { closed: Promise<{ code: number; reason: string }> }): Promise<void> {
  const rows = await keyRowsAtLeast(s.t, key, 2)
  expect(rows.map((r) => [r.status, r.error])).toEqual([
    [200, null],
    [429, 'budget_exceeded'],
  ])
  // The turn is billed as before; the refusal at $0, naming the rule, under the socket's key and model.
  expect(rows[0].cost_usd).toBeGreaterThan(LIMIT)
  expect(rows[1]).toMatchObject({ provider: 'gemini', endpoint: 'live', model: 'gemini-3.1-flash-live-preview', cost_usd: 0 })
  // Counted as a refusal of the rule, as every other refusal is.
  const metrics = (await request(`${s.t.url}/metrics`)).text
  expect(metrics).toContain(`burnrate_refusals_total{reason="budget_exceeded",rule="${RULE}"} ${++refusals}`)
  const closed = await c.closed
  expect(closed.code).toBe(1011)
  expect(closed.reason).toContain(RULE)
  expect(closed.reason).toContain('budget_exceeded')
  expect(closed.reason).not.toContain(key)
}

describe('a Gemini Live socket whose key reaches a block limit', () => {
  it('a clientContent turn after that is refused: not sent upstream (nor what follows it), recorded, the socket closed naming the rule', async () => {
    const key = 'AIza-live-gate-content-0001'
    const c = await session(key)
    c.ws.send(content('What is on the desk?'))
    await keyRowsAtLeast(s.t, key, 1)
    // The first turn passed the check (under the limit), and the check recorded nothing of its own.
    expect(rowsOfKey(s.t, key)).toHaveLength(1)
    // Over the limit now: the next turn is refused, and the audio sent right behind it goes nowhere.
    c.ws.send(content('And now?'))
    c.ws.send(audio('AAAA'))
    await expectRefused(key, c)
    expect(sent(key).map((f) => Object.keys(f)[0])).toEqual(['clientContent'])
    expect(rowsOfKey(s.t, key)).toHaveLength(2)
  })

  it('a realtimeInput text turn is refused the same way', async () => {
    const key = 'AIza-live-gate-text-0002'
    const c = await session(key)
    c.ws.send(JSON.stringify({ realtimeInput: { text: 'Hello' } }))
    await keyRowsAtLeast(s.t, key, 1)
    c.ws.send(JSON.stringify({ realtimeInput: { text: 'Again' } }))
    await expectRefused(key, c)
    expect(sent(key)).toEqual([{ realtimeInput: { text: 'Hello' } }])
  })

  it('the microphone’s audio after a turn took the key over its limit is refused, before the server can start another turn on it', async () => {
    const key = 'AIza-live-gate-audio-0003'
    const c = await session(key)
    c.ws.send(audio('AAAA'))
    c.ws.send(audio('END'))
    await keyRowsAtLeast(s.t, key, 1)
    c.ws.send(audio('BBBB'))
    await expectRefused(key, c)
    expect(sent(key).map((f) => f.realtimeInput.audio.data)).toEqual(['AAAA', 'END'])
  })

  it('a toolResponse, whose answer is a generation billed of its own, is refused the same way', async () => {
    const key = 'AIza-live-gate-tool-0004'
    const c = await session(key)
    c.ws.send(content('What is on the desk?'))
    await keyRowsAtLeast(s.t, key, 1)
    c.ws.send(JSON.stringify({ toolResponse: { functionResponses: [{ id: 'call_1', name: 'look', response: { result: 'a mug' } }] } }))
    await expectRefused(key, c)
    expect(sent(key).map((f) => Object.keys(f)[0])).toEqual(['clientContent'])
  })
})
