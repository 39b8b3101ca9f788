import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import WebSocket from 'ws'
import { eventually } from '../support/http'
import { ledgerRows } from '../support/ledger-rows'
import { openSocket, rowsAfter, serverOverWsUpstream } from '../support/ws-sessions'

/**
 * Gemini's Live API over Burnrate's WebSocket relay (README: WebSockets): each turn, ended by the
 * server's `turnComplete`, is one call with its `usageMetadata` priced per modality, at the model
 * the client's `setup` names; the socket's upgrade is checked by the budgets. The upstream replays
 * the server messages of test/fixtures/gemini-live (README there), as binary frames as Google sends them.
 */

const messages = (name: string) => readFileSync(join(__dirname, '../fixtures/gemini-live', name), 'utf8').trim().split('\n')
const AUDIO = messages('native-audio-turns.jsonl')
const VIDEO = messages('text-video-turn.jsonl')

const seen: { url: string; frames: any[] }[] = []
const logged: string[] = []

const V1BETA = '/ws/google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContent'
const CONSTRAINED = '/ws/google.ai.generativelanguage.v1alpha.GenerativeService.BidiGenerateContentConstrained'

const log = { debug: (m: string) => logged.push(m), info: (m: string) => logged.push(m), warn: (m: string) => logged.push(m), error: (m: string) => logged.push(m) }
const s = serverOverWsUpstream(
  {
    onConnection: (ws, req) => {
      const me = { url: req.url ?? '', frames: [] as any[] }
      seen.push(me)
      ws.on('message', (data) => {
        const f = JSON.parse(String(data))
        me.frames.push(f)
        const script = f.setup?.model?.includes('3.1') ? VIDEO : AUDIO
        if (f.setup) ws.send(Buffer.from(script[0]), { binary: true })
        // The user's speech ends (server VAD): the first turn; speech again: the second.
        if (f.realtimeInput?.audio?.data === 'END1') for (const m of AUDIO.slice(1, 7)) ws.send(Buffer.from(m), { binary: true })
        if (f.realtimeInput?.audio?.data === 'END2') for (const m of AUDIO.slice(7)) ws.send(Buffer.from(m), { binary: true })
        if (f.clientContent?.turnComplete) for (const m of VIDEO.slice(1)) ws.send(Buffer.from(m), { binary: true })
        // Usage twice in one turn (the last is its bill), then a turn whose usage follows its turnComplete.
        if (f.realtimeInput?.audio?.data === 'SPLIT') {
          const usage = (prompt: number, response: number) => ({ promptTokenCount: prompt, responseTokenCount: response, totalTokenCount: prompt + response, promptTokensDetails: [{ modality: 'TEXT', tokenCount: prompt }], responseTokensDetails: [{ modality: 'AUDIO', tokenCount: response }] })
          for (const m of [
            AUDIO[2],
            JSON.stringify({ serverContent: { modelTurn: { parts: [{ inlineData: { mimeType: 'audio/pcm;rate=24000', data: 'AAAA' } }] } }, usageMetadata: usage(100, 5) }),
            JSON.stringify({ serverContent: { turnComplete: true }, usageMetadata: usage(100, 9) }),
            AUDIO[2],
            JSON.stringify({ serverContent: { turnComplete: true } }),
            JSON.stringify({ usageMetadata: { ...usage(120, 7), cachedContentTokenCount: 60 } }),
          ])
            ws.send(Buffer.from(m), { binary: true })
        }
        // A turn whose usage is sent again after its turnComplete (repeated totals, on a message of its own).
        if (f.realtimeInput?.audio?.data === 'REPEAT') {
          const last = JSON.parse(AUDIO[6])
          for (const m of [AUDIO[2], AUDIO[6], JSON.stringify({ usageMetadata: last.usageMetadata })]) ws.send(Buffer.from(m), { binary: true })
        }
        // A turn that begins and never ends.
        if (f.realtimeInput?.audio?.data === 'HANG') ws.send(Buffer.from(AUDIO[2]), { binary: true })
      })
    },
  },
  { budgets: { rules: [{ api_key_pattern: 'AIza-blocked-*', daily_limit_usd: 0, action: 'block' }] } },
  { log },
)

const open = (path: string, headers: Record<string, string> = {}) => openSocket(s.t, path, { headers })

const setup = (model: string) => JSON.stringify({ setup: { model, generationConfig: { responseModalities: ['AUDIO'] } } })
const audio = (data: string) => JSON.stringify({ realtimeInput: { audio: { mimeType: 'audio/pcm;rate=16000', data } } })

describe('a Gemini Live API socket', () => {
  it('each turn is one call at its turnComplete, priced per modality at the model of the client setup, under the ?key= it came with', async () => {
    const before = ledgerRows(s.t.dbFile).length
    const key = 'AIza-test-live-secret-0001'
    const c = await open(`/gemini${V1BETA}?key=${key}`, { 'x-burnrate-agent': 'voice-bot' })
    c.ws.send(setup('models/gemini-2.5-flash-native-audio-preview-09-2025'))
    await eventually(() => c.frames.some((f) => f.setupComplete), 10_000)
    c.ws.send(audio('END1'))
    const [first] = await rowsAfter(s.t, before, 1)
    c.ws.send(audio('END2'))
    const rows = await rowsAfter(s.t, before, 2)
    await eventually(() => c.frames.length === AUDIO.length, 10_000)
    // Every server message reached the client, unchanged.
    expect(c.frames.map((f) => JSON.stringify(f))).toEqual(AUDIO)
    c.ws.close()
    // The first turn was recorded at its own turnComplete, before the second began.
    expect(first.input_tokens).toBe(373)
    const common = { provider: 'gemini', endpoint: 'live', model: 'gemini-2.5-flash-native-audio-preview-09-2025', status: 200, agent: 'voice-bot', key_hint: expect.stringContaining('0001'), estimated: 0, priced: 1 }
    expect(rows[0]).toMatchObject({ ...common, input_tokens: 373, output_tokens: 23 })
    expect(rows[1]).toMatchObject({ ...common, input_tokens: 413, output_tokens: 22 })
    // gemini-live-2.5-flash (native audio): text $0.50/M in, $2/M out; audio $3/M in, $12/M out.
    expect(rows[0].cost_usd).toBeCloseTo((301 * 0.5 + 72 * 3 + 23 * 12) / 1e6, 15)
    expect(rows[1].cost_usd).toBeCloseTo((324 * 0.5 + 89 * 3 + 22 * 12) / 1e6, 15)
    // The key went upstream as it came; it reached neither the ledger nor the log.
    expect(seen.at(-1)!.url).toContain(`key=${key}`)
    expect(JSON.stringify(ledgerRows(s.t.dbFile))).not.toContain(key)
    expect(logged.join('\n')).not.toContain(key)
  })

  it('v1alpha, an x-goog-api-key header, a text turn on video with tool-use prompt and thoughts: each at its rate', async () => {
    const before = ledgerRows(s.t.dbFile).length
    const c = await open(`/gemini${V1BETA.replace('v1beta', 'v1alpha')}`, { 'x-goog-api-key': 'AIza-test-live-0002' })
    c.ws.send(setup('models/gemini-3.1-flash-live-preview'))
    await eventually(() => c.frames.some((f) => f.setupComplete), 10_000)
    c.ws.send(JSON.stringify({ clientContent: { turns: [{ role: 'user', parts: [{ text: 'What is on the desk?' }] }], turnComplete: true } }))
    const [row] = await rowsAfter(s.t, before, 1)
    c.ws.close()
    expect(row).toMatchObject({ endpoint: 'live', model: 'gemini-3.1-flash-live-preview', status: 200, key_hint: expect.stringContaining('0002'), input_tokens: 1330, output_tokens: 20, reasoning_tokens: 12, priced: 1 })
    // gemini-3.1-flash-live-preview: text $0.75/M in, video $1/M in; text $4.50/M out (thoughts too).
    expect(row.cost_usd).toBeCloseTo(((32 + 40) * 0.75 + 1258 * 1 + 20 * 4.5) / 1e6, 15)
  })

  it('the bare /ws/… path of an SDK whose base URL is Burnrate, and the ephemeral-token Constrained method, are metered too', async () => {
    const before = ledgerRows(s.t.dbFile).length
    const token = 'auth_tokens/ephemeral-secret-0003'
    const c = await open(`${CONSTRAINED}?access_token=${encodeURIComponent(token)}`)
    c.ws.send(setup('models/gemini-3.1-flash-live-preview'))
    await eventually(() => c.frames.some((f) => f.setupComplete), 10_000)
    c.ws.send(JSON.stringify({ clientContent: { turns: [{ role: 'user', parts: [{ text: 'Again?' }] }], turnComplete: true } }))
    const [row] = await rowsAfter(s.t, before, 1)
    c.ws.close()
    expect(seen.at(-1)!.url).toBe(`${CONSTRAINED}?access_token=${encodeURIComponent(token)}`)
    expect(row).toMatchObject({ provider: 'gemini', endpoint: 'live', model: 'gemini-3.1-flash-live-preview', status: 200, input_tokens: 1330, priced: 1 })
    expect(JSON.stringify(ledgerRows(s.t.dbFile))).not.toContain('ephemeral-secret')
    expect(logged.join('\n')).not.toContain('ephemeral-secret')
  })

  it('a key over its block limit is refused the socket itself: HTTP 429, recorded at $0, the upstream never asked', async () => {
    const before = ledgerRows(s.t.dbFile).length
    const sockets = seen.length
    const status = await new Promise<number>((resolve, reject) => {
      const ws = new WebSocket(`${s.t.url.replace('http', 'ws')}/gemini${V1BETA}?key=AIza-blocked-live-0004`)
      ws.on('unexpected-response', (_req, res) => {
        res.resume()
        resolve(res.statusCode ?? 0)
      })
      ws.on('open', () => reject(new Error('opened')))
      ws.on('error', () => {})
    })
    expect(status).toBe(429)
    const [row] = await rowsAfter(s.t, before, 1)
    expect(row).toMatchObject({ provider: 'gemini', endpoint: 'live', status: 429, error: 'budget_exceeded', cost_usd: 0, key_hint: expect.stringContaining('0004') })
    expect(seen.length).toBe(sockets)
    expect(logged.join('\n')).not.toContain('AIza-blocked-live-0004')
  })

  it('a turn that reports its usage twice is billed by the last; one whose usage follows its turnComplete, by that message', async () => {
    const before = ledgerRows(s.t.dbFile).length
    const c = await open(`/gemini${V1BETA}?key=AIza-test-live-0006`)
    c.ws.send(setup('models/gemini-2.5-flash-native-audio-preview-09-2025'))
    await eventually(() => c.frames.some((f) => f.setupComplete), 10_000)
    c.ws.send(audio('SPLIT'))
    const rows = await rowsAfter(s.t, before, 2)
    c.ws.close()
    expect(rows.map((r) => [r.status, r.input_tokens, r.output_tokens, r.estimated])).toEqual([
      [200, 100, 9, 0],
      [200, 120, 7, 0],
    ])
    // The price data gives the model no cache rate: its 60 cached tokens cost the input rate, not nothing.
    expect(rows[1].cache_read_tokens).toBe(60)
    expect(rows[1].cost_usd).toBeCloseTo((120 * 0.5 + 7 * 12) / 1e6, 15)
  })

  it('a setup that names no model: its turns are recorded with their usage, unpriced', async () => {
    const before = ledgerRows(s.t.dbFile).length
    const c = await open(`/gemini${V1BETA}?key=AIza-test-live-0007`)
    c.ws.send(JSON.stringify({ setup: {} }))
    await eventually(() => c.frames.some((f) => f.setupComplete), 10_000)
    c.ws.send(JSON.stringify({ clientContent: { turns: [{ role: 'user', parts: [{ text: 'Hi' }] }], turnComplete: true } }))
    const [row] = await rowsAfter(s.t, before, 1)
    c.ws.close()
    expect(row).toMatchObject({ endpoint: 'live', model: '', status: 200, input_tokens: 1330, priced: 0 })
  })

  it('a turn cut by the client before its turnComplete is recorded as abandoned, estimated', async () => {
    const before = ledgerRows(s.t.dbFile).length
    const c = await open(`/gemini${V1BETA}?key=AIza-test-live-0005`)
    c.ws.send(setup('models/gemini-2.5-flash-native-audio-preview-09-2025'))
    await eventually(() => c.frames.some((f) => f.setupComplete), 10_000)
    c.ws.send(audio('HANG'))
    await eventually(() => c.frames.some((f) => f.serverContent?.modelTurn), 10_000)
    c.ws.close()
    const [row] = await rowsAfter(s.t, before, 1)
    expect(row).toMatchObject({ endpoint: 'live', model: 'gemini-2.5-flash-native-audio-preview-09-2025', status: 499, estimated: 1 })
  })

  it('usage sent again after a turn was recorded (repeated totals) bills nothing more, even when the socket closes next', async () => {
    const before = ledgerRows(s.t.dbFile).length
    const c = await open(`/gemini${V1BETA}?key=AIza-test-live-0008`)
    c.ws.send(setup('models/gemini-2.5-flash-native-audio-preview-09-2025'))
    await eventually(() => c.frames.some((f) => f.setupComplete), 10_000)
    c.ws.send(audio('REPEAT'))
    await rowsAfter(s.t, before, 1)
    // The repeat was read by the relay before it reached the client.
    await eventually(() => c.frames.length === 4, 10_000)
    c.ws.close()
    // A turn on another socket, recorded after the close was handled.
    const d = await open(`/gemini${V1BETA}?key=AIza-test-live-0009`)
    d.ws.send(setup('models/gemini-2.5-flash-native-audio-preview-09-2025'))
    await eventually(() => d.frames.some((f) => f.setupComplete), 10_000)
    d.ws.send(audio('END1'))
    await eventually(() => ledgerRows(s.t.dbFile).slice(before).some((r: any) => r.key_hint.endsWith('0009')), 10_000)
    d.ws.close()
    const mine = ledgerRows(s.t.dbFile).slice(before).filter((r: any) => r.key_hint.endsWith('0008'))
    expect(mine.map((r: any) => [r.status, r.input_tokens, r.output_tokens])).toEqual([[200, 373, 23]])
  })
})
