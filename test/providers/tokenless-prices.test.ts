import { beforeEach, describe, expect, it } from 'vitest'
import { multipartForm, postForm } from '../support/multipart'
import { serverOverMockUpstream } from '../support/server'
import { answer, recorded } from './ledger'

/**
 * A model the price data knows but prices by nothing its answer reports: gpt-transcribe is priced
 * per hour of audio only, and an answer in OpenAI's token usage shape (`type: "tokens"`, as the
 * gpt-4o-transcribe models answer) gives no audio length. Its tokens are kept, unpriced, as a model
 * the data does not know is, not recorded as a free call.
 */
const s = serverOverMockUpstream()
beforeEach(() => {
  s.upstream.requests.length = 0
})

const AUDIO = Buffer.concat([Buffer.from([0xff, 0xfb, 0x90, 0x64]), Buffer.alloc(64 * 1024, 0x55)])

describe('a transcription model priced only by the audio hour, answering token usage', () => {
  it('is recorded unpriced with its tokens, not priced at $0', async () => {
    const usage = { type: 'tokens', input_tokens: 14, input_token_details: { text_tokens: 4, audio_tokens: 10 }, output_tokens: 45, total_tokens: 59 }
    answer(s.upstream, { text: 'Hello there.', usage })
    const body = multipartForm({ model: 'gpt-transcribe', response_format: 'json' }, AUDIO)
    const row = await recorded(s.t, async () => expect(await postForm(`${s.t.url}/openai/v1/audio/transcriptions`, body, 'Bearer sk-proj-audio-0000000000002')).toBe(200))
    expect(row).toMatchObject({ endpoint: 'audio', model: 'gpt-transcribe', input_tokens: 14, output_tokens: 45, priced: 0, cost_usd: 0 })
  })

  it('one answering its duration is priced by it', async () => {
    answer(s.upstream, { text: 'Hello there.', usage: { type: 'duration', seconds: 95 } })
    const body = multipartForm({ model: 'gpt-transcribe' }, AUDIO)
    const row = await recorded(s.t, async () => expect(await postForm(`${s.t.url}/openai/v1/audio/transcriptions`, body, 'Bearer sk-proj-audio-0000000000002')).toBe(200))
    expect(row).toMatchObject({ endpoint: 'audio', model: 'gpt-transcribe', input_tokens: 0, output_tokens: 0, priced: 1 })
    // $0.27 an hour
    expect(row.cost_usd).toBeCloseTo((95 / 3600) * 0.27, 12)
  })
})
