import { describe, expect, it } from 'vitest'
import { eventually } from '../support/http'
import { type ClientSocket, LIVE_PATH, openSocket, rowsOfKey, serverOverWsUpstream } from '../support/ws-sessions'

/**
 * How a Gemini Live API socket's server messages split into calls (README: WebSockets): a
 * generation that ends with a `toolCall` carrying its usage, one the user interrupted, and a
 * transcription that comes after its turn was recorded. The upstream plays the messages a
 * client's `play` frame lists (passed upstream unread, as any client frame after the setup).
 */

/** Each upstream socket's close, by the key in its URL. */
const closed = new Map<string, Promise<void>>()

const s = serverOverWsUpstream({
  onConnection: (ws, req) => {
    const key = new URL(req.url ?? '', 'http://x').searchParams.get('key') ?? ''
    closed.set(key, new Promise((r) => ws.on('close', () => r())))
    ws.on('message', (data) => {
      const f = JSON.parse(String(data))
      if (f.setup) ws.send(Buffer.from(JSON.stringify({ setupComplete: {} })), { binary: true })
      for (const m of f.play ?? []) ws.send(Buffer.from(JSON.stringify(m)), { binary: true })
    })
  },
})

const MODEL = 'models/gemini-2.5-flash-native-audio-preview-09-2025'

async function open(key: string): Promise<ClientSocket> {
  const c = await openSocket(s.t, `${LIVE_PATH}?key=${key}`)
  c.ws.send(JSON.stringify({ setup: { model: MODEL } }))
  await eventually(() => c.frames.some((f) => f.setupComplete), 10_000)
  return c
}

const usage = (prompt: number, response: number) => ({
  promptTokenCount: prompt,
  responseTokenCount: response,
  totalTokenCount: prompt + response,
  promptTokensDetails: [{ modality: 'TEXT', tokenCount: prompt }],
  responseTokensDetails: [{ modality: 'AUDIO', tokenCount: response }],
})
const audioOut = { serverContent: { modelTurn: { parts: [{ inlineData: { mimeType: 'audio/pcm;rate=24000', data: 'AAAA' } }] } } }
const play = (...messages: unknown[]) => JSON.stringify({ play: messages })

/** The client closes; once the upstream has its close and every call is recorded, the key's rows. */
async function closeAndRead(c: ClientSocket, key: string): Promise<any[]> {
  c.ws.close(1000)
  await closed.get(key)
  expect(await s.t.server.proxy.drain(5_000)).toBe(true)
  return rowsOfKey(s.t, key)
}
/** gemini-live-2.5-flash: text $0.50/M in, audio $12/M out. */
const cost = (prompt: number, response: number) => (prompt * 0.5 + response * 12) / 1e6

describe('a Gemini Live API socket, call by call', () => {
  it('a generation that asks for a tool with its usage on the toolCall is billed by that usage, and the answer after the toolResponse by its own', async () => {
    const key = 'AIza-test-live-turns-0001'
    const c = await open(key)
    c.ws.send(play(audioOut, { toolCall: { functionCalls: [{ id: 'fc_1', name: 'get_weather', args: { city: 'Oslo' } }] }, usageMetadata: usage(500, 12) }))
    await eventually(() => c.frames.some((f) => f.toolCall), 10_000)
    c.ws.send(JSON.stringify({ toolResponse: { functionResponses: [{ id: 'fc_1', name: 'get_weather', response: { result: 'rain' } }] } }))
    c.ws.send(play(audioOut, { serverContent: { turnComplete: true }, usageMetadata: usage(540, 30) }))
    await eventually(() => c.frames.some((f) => f.serverContent?.turnComplete), 10_000)
    const r = await closeAndRead(c, key)
    expect(r.map((x) => [x.status, x.input_tokens, x.output_tokens, x.estimated])).toEqual([
      [200, 500, 12, 0],
      [200, 540, 30, 0],
    ])
    expect(r[0].cost_usd).toBeCloseTo(cost(500, 12), 15)
    expect(r[1].cost_usd).toBeCloseTo(cost(540, 30), 15)
  })

  it('a toolCall without usage leaves the turn whole: billed once, by its turnComplete', async () => {
    const key = 'AIza-test-live-turns-0002'
    const c = await open(key)
    c.ws.send(play(audioOut, { toolCall: { functionCalls: [{ id: 'fc_2', name: 'get_weather', args: {} }] } }))
    await eventually(() => c.frames.some((f) => f.toolCall), 10_000)
    c.ws.send(JSON.stringify({ toolResponse: { functionResponses: [{ id: 'fc_2', name: 'get_weather', response: { result: 'sun' } }] } }))
    c.ws.send(play(audioOut, { serverContent: { turnComplete: true }, usageMetadata: usage(600, 20) }))
    await eventually(() => c.frames.some((f) => f.serverContent?.turnComplete), 10_000)
    const r = await closeAndRead(c, key)
    expect(r.map((x) => [x.status, x.input_tokens, x.output_tokens, x.estimated])).toEqual([[200, 600, 20, 0]])
  })

  it('a turn interrupted without a turnComplete is its own call, with the usage it reported; the next turn is billed by its own', async () => {
    const key = 'AIza-test-live-turns-0003'
    const c = await open(key)
    c.ws.send(
      play(
        audioOut,
        { serverContent: { interrupted: true }, usageMetadata: usage(410, 8) },
        { serverContent: { inputTranscription: { text: 'wait, no' } } },
        audioOut,
        { serverContent: { turnComplete: true }, usageMetadata: usage(430, 25) },
      ),
    )
    await eventually(() => c.frames.some((f) => f.serverContent?.turnComplete), 10_000)
    const r = await closeAndRead(c, key)
    expect(r.map((x) => [x.status, x.input_tokens, x.output_tokens, x.estimated])).toEqual([
      [200, 410, 8, 0],
      [200, 430, 25, 0],
    ])
  })

  it('a turn interrupted without usage or turnComplete is its own call, estimated; the next turn keeps its bill', async () => {
    const key = 'AIza-test-live-turns-0004'
    const c = await open(key)
    c.ws.send(play(audioOut, { serverContent: { interrupted: true } }, audioOut, { serverContent: { turnComplete: true }, usageMetadata: usage(450, 21) }))
    await eventually(() => c.frames.some((f) => f.serverContent?.turnComplete), 10_000)
    const r = await closeAndRead(c, key)
    // (The estimate may be written after the next turn's row.)
    const [cut, next] = [...r].sort((a, b) => b.estimated - a.estimated)
    expect(r).toHaveLength(2)
    expect(cut).toMatchObject({ status: 200, estimated: 1 })
    expect(next).toMatchObject({ status: 200, estimated: 0, input_tokens: 450, output_tokens: 21 })
  })

  it('an interrupted turn whose turnComplete and usage follow (the user already speaking) is one call, billed by them', async () => {
    const key = 'AIza-test-live-turns-0005'
    const c = await open(key)
    c.ws.send(
      play(audioOut, { serverContent: { interrupted: true } }, { serverContent: { inputTranscription: { text: 'stop' } } }, { serverContent: { turnComplete: true }, usageMetadata: usage(413, 22) }),
    )
    await eventually(() => c.frames.some((f) => f.serverContent?.turnComplete), 10_000)
    const r = await closeAndRead(c, key)
    expect(r.map((x) => [x.status, x.input_tokens, x.output_tokens, x.estimated])).toEqual([[200, 413, 22, 0]])
  })

  it('an outputTranscription that comes after its turn was recorded begins no call: the close leaves no 499 row', async () => {
    const key = 'AIza-test-live-turns-0006'
    const c = await open(key)
    c.ws.send(
      play(
        audioOut,
        { serverContent: { generationComplete: true } },
        { serverContent: { turnComplete: true }, usageMetadata: usage(373, 23) },
        { serverContent: { outputTranscription: { text: 'I cannot check the weather.' } } },
      ),
    )
    // The late transcription was read by the relay before it reached the client.
    await eventually(() => c.frames.some((f) => f.serverContent?.outputTranscription), 10_000)
    const r = await closeAndRead(c, key)
    expect(r.map((x) => [x.status, x.input_tokens, x.output_tokens])).toEqual([[200, 373, 23]])
  })

  it('an inputTranscription that comes after its turn was recorded (Google gives a transcription no order with the turn) begins no call: the close leaves no 499 row', async () => {
    const key = 'AIza-test-live-turns-0008'
    const c = await open(key)
    c.ws.send(
      play(
        audioOut,
        { serverContent: { generationComplete: true } },
        { serverContent: { turnComplete: true }, usageMetadata: usage(373, 23) },
        { serverContent: { inputTranscription: { text: "What's the weather like" } } },
      ),
    )
    // The late transcription was read by the relay before it reached the client.
    await eventually(() => c.frames.some((f) => f.serverContent?.inputTranscription), 10_000)
    const r = await closeAndRead(c, key)
    expect(r.map((x) => [x.status, x.input_tokens, x.output_tokens])).toEqual([[200, 373, 23]])
  })

  it('an outputTranscription while an ended turn waits for its usage keeps it waiting: that usage is its bill', async () => {
    const key = 'AIza-test-live-turns-0007'
    const c = await open(key)
    c.ws.send(
      play(
        audioOut,
        { serverContent: { turnComplete: true } },
        { serverContent: { outputTranscription: { text: 'late words' } } },
        { usageMetadata: usage(390, 17) },
      ),
    )
    await eventually(() => c.frames.some((f) => f.usageMetadata), 10_000)
    const r = await closeAndRead(c, key)
    expect(r.map((x) => [x.status, x.input_tokens, x.output_tokens, x.estimated])).toEqual([[200, 390, 17, 0]])
  })
})
