import { calcPrice } from '@pydantic/genai-prices'
import { beforeEach, describe, expect, it } from 'vitest'
import { mp3, vbrMp3, wav } from '../support/audio-files'
import { BOUNDARY, multipartForm, postForm } from '../support/multipart'
import { serverOverMockUpstream } from '../support/server'
import { answer, recorded } from './ledger'
import type { MockUpstream } from '../support/mock-upstream'

/**
 * OpenAI audio transcriptions: the request is a multipart form (the model is a form field, the
 * audio a file part), and the answer names no model. Its usage is either tokens, with the audio
 * part in `input_token_details` (gpt-4o-transcribe), or a duration in seconds (whisper-1).
 * Bodies from OpenAI's API reference (openai-node `TranscriptionCreateResponse` / `Usage`).
 */

const s = serverOverMockUpstream()
beforeEach(() => {
  s.upstream.requests.length = 0
})

const form = (fields: Record<string, string>, audio: Buffer) => multipartForm(fields, audio)
const post = (path: string, body: Buffer) => postForm(`${s.t.url}${path}`, body, 'Bearer sk-proj-audio-0000000000001')

// Audio bytes with a fake `name="model"` inside: only real form fields count.
const AUDIO = Buffer.concat([Buffer.from([0xff, 0xfb, 0x90, 0x64]), Buffer.from('Content-Disposition: form-data; name="model"\r\n\r\nwhisper-1\r\n'), Buffer.alloc(256 * 1024, 0x55)])

describe('OpenAI audio transcriptions', () => {
  it('gpt-4o-transcribe: the model from the form, audio input tokens at the audio rate', async () => {
    const usage = { type: 'tokens', input_tokens: 14, input_token_details: { text_tokens: 4, audio_tokens: 10 }, output_tokens: 45, total_tokens: 59 }
    answer(s.upstream, { text: 'Hello there.', usage })
    const body = form({ model: 'gpt-4o-transcribe', response_format: 'json' }, AUDIO)
    const row = await recorded(s.t, async () => expect(await post('/openai/v1/audio/transcriptions', body)).toBe(200))
    expect(s.upstream.requests[0].body.equals(body)).toBe(true)
    expect(row).toMatchObject({ endpoint: 'audio', model: 'gpt-4o-transcribe', input_tokens: 14, output_tokens: 45, priced: 1, estimated: 0 })
    expect(row.cost_usd).toBe(calcPrice({ input_tokens: 14, input_audio_tokens: 10, output_tokens: 45 }, 'gpt-4o-transcribe', { providerId: 'openai', timestamp: new Date(row.ts) })!.total_price)
    // $2.50/M text input, $6/M audio input, $10/M output
    expect(row.cost_usd).toBeCloseTo((4 * 2.5 + 10 * 6 + 45 * 10) / 1e6, 15)
  })

  it('whisper-1: billed by the second', async () => {
    answer(s.upstream, { text: 'Hello there.', usage: { type: 'duration', seconds: 95 } })
    const row = await recorded(s.t, async () => expect(await post('/openai/v1/audio/transcriptions', form({ model: 'whisper-1' }, AUDIO))).toBe(200))
    expect(row).toMatchObject({ endpoint: 'audio', model: 'whisper-1', input_tokens: 0, output_tokens: 0, priced: 1 })
    expect(row.cost_usd).toBe(calcPrice({ audio_seconds: 95 }, 'whisper-1', { providerId: 'openai', timestamp: new Date(row.ts) })!.total_price)
    // $0.006 a minute
    expect(row.cost_usd).toBeCloseTo((95 / 60) * 0.006, 12)
  })
})

describe('Groq audio transcriptions (whisper on Groq)', () => {
  // Groq answers without usage; `verbose_json` says how long the audio was, what Groq bills by the hour.
  it('verbose_json: billed by the audio length its `duration` gives', async () => {
    answer(s.upstream, { task: 'transcribe', language: 'English', duration: 95.3, text: ' Hello from the Versal AISDK.', segments: [], x_groq: { id: 'req_01kha51bpcezj8q824a6zfchr1' } })
    const body = form({ model: 'whisper-large-v3', response_format: 'verbose_json' }, AUDIO)
    const row = await recorded(s.t, async () => expect(await postForm(`${s.t.url}/groq/v1/audio/transcriptions`, body, 'Bearer gsk-audio-000000000000001')).toBe(200))
    expect(s.upstream.requests[0].url).toBe('/openai/v1/audio/transcriptions')
    expect(row).toMatchObject({ provider: 'groq', endpoint: 'audio', model: 'whisper-large-v3', input_tokens: 0, output_tokens: 0, priced: 1, estimated: 0 })
    expect(row.cost_usd).toBe(calcPrice({ audio_seconds: 95.3 }, 'whisper-large-v3', { providerId: 'groq', timestamp: new Date(row.ts) })!.total_price)
    // $0.111 an hour
    expect(row.cost_usd).toBeCloseTo((95.3 / 3600) * 0.111, 12)
  })

  // Groq bills an hour of audio, but answers `json` and `text` without usage or the audio's
  // length: it is read from the uploaded file's headers, and the call is marked estimated (the
  // length is Burnrate's reading, not Groq's count).
  const groq = (body: Buffer) => postForm(`${s.t.url}/groq/v1/audio/transcriptions`, body, 'Bearer gsk-audio-000000000000001')
  const price = (seconds: number, model: string, provider: string, ts: number) => calcPrice({ audio_seconds: seconds }, model, { providerId: provider, timestamp: new Date(ts) })!.total_price

  it('json: billed by the length of the uploaded WAV', async () => {
    answer(s.upstream, { text: ' Hello there.', x_groq: { id: 'req_01kha51bpcezj8q824a6zfchr2' } })
    const body = form({ model: 'whisper-large-v3-turbo', response_format: 'json' }, wav(12.5))
    const row = await recorded(s.t, async () => expect(await groq(body)).toBe(200))
    expect(s.upstream.requests[0].body.equals(body)).toBe(true)
    expect(row).toMatchObject({ provider: 'groq', endpoint: 'audio', model: 'whisper-large-v3-turbo', input_tokens: 0, output_tokens: 0, priced: 1, estimated: 1 })
    expect(JSON.parse(row.usage_extra)).toEqual({ extra: { audio_seconds: 12.5 } })
    expect(row.cost_usd).toBe(price(12.5, 'whisper-large-v3-turbo', 'groq', row.ts))
    // $0.04 an hour
    expect(row.cost_usd).toBeCloseTo((12.5 / 3600) * 0.04, 12)
  })

  it('text: billed by the length of the uploaded MP3 (the file first, fields after, as the Node SDK sends it)', async () => {
    plainText(s.upstream, 'Hello there.\n')
    const body = form({ model: 'whisper-large-v3', response_format: 'text' }, mp3(95.04))
    const row = await recorded(s.t, async () => expect(await groq(body)).toBe(200))
    expect(row).toMatchObject({ provider: 'groq', model: 'whisper-large-v3', priced: 1, estimated: 1 })
    expect(JSON.parse(row.usage_extra)).toEqual({ extra: { audio_seconds: 95.04 } })
    expect(row.cost_usd).toBeCloseTo((95.04 / 3600) * 0.111, 12)
  })

  it('the fields first and the file last (as the Python SDK sends it), and a file past both scanned windows', async () => {
    plainText(s.upstream, 'Hello there.\n')
    const audio = wav(8 * 60) // 15 MB
    const fields = Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="model"\r\n\r\nwhisper-large-v3\r\n--${BOUNDARY}\r\nContent-Disposition: form-data; name="response_format"\r\n\r\ntext\r\n`)
    const file = Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="talk.wav"\r\nContent-Type: audio/wav\r\n\r\n`)
    const body = Buffer.concat([fields, file, audio, Buffer.from(`\r\n--${BOUNDARY}--\r\n`)])
    const row = await recorded(s.t, async () => expect(await groq(body)).toBe(200))
    expect(row).toMatchObject({ model: 'whisper-large-v3', priced: 1, estimated: 1 })
    expect(JSON.parse(row.usage_extra)).toEqual({ extra: { audio_seconds: 480 } })
  })

  // "Minimum Billed Length: 10 seconds. If you submit a request less than this, you will still be
  // billed for 10 seconds." (Groq's speech-to-text docs): the price data applies it.
  it('a clip shorter than 10 seconds is billed as 10 seconds, as Groq bills it', async () => {
    answer(s.upstream, { text: ' Yes.', x_groq: { id: 'req_01kha51bpcezj8q824a6zfchr3' } })
    const row = await recorded(s.t, async () => expect(await groq(form({ model: 'whisper-large-v3' }, wav(3)))).toBe(200))
    expect(JSON.parse(row.usage_extra)).toEqual({ extra: { audio_seconds: 3 } })
    expect(row.cost_usd).toBeCloseTo((10 / 3600) * 0.111, 12)
  })

  it('a file whose length cannot be read is estimated as before', async () => {
    answer(s.upstream, { text: ' Hello there.', x_groq: { id: 'req_01kha51bpcezj8q824a6zfchr4' } })
    const row = await recorded(s.t, async () => expect(await groq(form({ model: 'whisper-large-v3', response_format: 'json' }, AUDIO))).toBe(200))
    expect(row).toMatchObject({ provider: 'groq', model: 'whisper-large-v3', estimated: 1, cost_usd: 0 })
    expect(row.usage_extra).toBeNull()
  })

  // A 10-second VBR MP3 without a Xing header: 20 frames of leading silence at 32 kbit/s, then 397
  // at 256 kbit/s. Its first frames' bitrate taken as the file's made it 76.7 seconds, billed 7.7
  // times over; its length is not in its headers, so it is estimated at 0 as the README says.
  it('a VBR MP3 without a Xing header is estimated as before, not billed at its first frames’ bitrate', async () => {
    answer(s.upstream, { text: ' Hi.', x_groq: { id: 'req_01kha51bpcezj8q824a6zfchr5' } })
    const row = await recorded(s.t, async () => expect(await groq(form({ model: 'whisper-large-v3', response_format: 'json' }, vbrMp3([20, 1], [397, 13])))).toBe(200))
    expect(row).toMatchObject({ provider: 'groq', model: 'whisper-large-v3', estimated: 1, cost_usd: 0 })
    expect(row.usage_extra).toBeNull()
  })
})

describe('OpenAI whisper-1 answered as plain text', () => {
  // `text`, `srt` and `vtt` answers are the transcript alone: no room for the usage `json` carries.
  it('srt: billed by the length of the uploaded WAV', async () => {
    plainText(s.upstream, '1\n00:00:00,000 --> 00:00:04,200\nHello there.\n\n')
    const row = await recorded(s.t, async () => expect(await post('/openai/v1/audio/transcriptions', form({ model: 'whisper-1', response_format: 'srt' }, wav(42)))).toBe(200))
    expect(row).toMatchObject({ provider: 'openai', model: 'whisper-1', priced: 1, estimated: 1 })
    expect(JSON.parse(row.usage_extra)).toEqual({ extra: { audio_seconds: 42 } })
    // $0.006 a minute
    expect(row.cost_usd).toBeCloseTo((42 / 60) * 0.006, 12)
  })

  it('a model billed by tokens (gpt-4o-transcribe) is estimated by its tokens, not priced by the audio', async () => {
    plainText(s.upstream, 'Hello there.')
    const row = await recorded(s.t, async () => expect(await post('/openai/v1/audio/transcriptions', form({ model: 'gpt-4o-transcribe', response_format: 'text' }, wav(42)))).toBe(200))
    expect(row).toMatchObject({ model: 'gpt-4o-transcribe', estimated: 1 })
    expect(row.usage_extra).toBeNull()
  })
})

function plainText(upstream: MockUpstream, text: string): void {
  upstream.setResponder(() => ({ status: 200, headers: { 'content-type': 'text/plain; charset=utf-8' }, body: text }))
}
