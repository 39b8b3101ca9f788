import { calcPrice } from '@pydantic/genai-prices'
import { beforeEach, describe, expect, it } from 'vitest'
import { multipartForm, postForm } from '../support/multipart'
import { serverOverMockUpstream } from '../support/server'
import { answer, recorded } from './ledger'

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
})
