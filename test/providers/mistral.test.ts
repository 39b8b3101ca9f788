import { calcPrice } from '@pydantic/genai-prices'
import { beforeEach, describe, expect, it } from 'vitest'
import { postJson } from '../support/http'
import { multipartForm, postForm } from '../support/multipart'
import { serverOverMockUpstream } from '../support/server'
import { answer, recorded } from './ledger'

const s = serverOverMockUpstream()
beforeEach(() => {
  s.upstream.requests.length = 0
})

const KEY = 'Bearer mistral-test-0000000000000001'

describe('Mistral audio transcriptions (Voxtral)', () => {
  it('billed by the audio length its usage reports (prompt_audio_seconds), not by its tokens', async () => {
    // vercel/ai packages/mistral/src/__fixtures__/mistral-transcription.json (a recorded answer), text shortened.
    answer(s.upstream, {
      model: 'voxtral-mini-latest',
      text: 'Galileo was an American robotic space program that studied the planet Jupiter.',
      language: null,
      segments: [{ type: 'transcription_segment', text: 'Galileo was an American robotic space program that studied the planet Jupiter.', start: 0.1, end: 8.2, speaker_id: 'speaker_1' }],
      usage: { prompt_audio_seconds: 36, prompt_tokens: 13, completion_tokens: 151, total_tokens: 164, request_count: 1 },
    })
    const body = multipartForm({ model: 'voxtral-mini-latest' }, Buffer.alloc(64 * 1024, 0x55))
    const row = await recorded(s.t, async () => expect(await postForm(`${s.t.url}/mistral/v1/audio/transcriptions`, body, KEY)).toBe(200))
    expect(s.upstream.requests[0].url).toBe('/v1/audio/transcriptions')
    expect(row).toMatchObject({ provider: 'mistral', endpoint: 'audio', model: 'voxtral-mini-latest', input_tokens: 13, output_tokens: 151, priced: 1, estimated: 0 })
    const expected = calcPrice({ input_tokens: 13, output_tokens: 151, audio_seconds: 36 }, 'voxtral-mini-latest', { providerId: 'mistral', timestamp: new Date(row.ts) })
    expect(expected).not.toBeNull()
    expect(row.cost_usd).toBe(expected!.total_price)
    expect(row.cost_usd).toBeGreaterThan(0)
  })

  it('a chat with audio in its prompt, on a model billed by tokens, is priced by its tokens', async () => {
    const usage = { prompt_tokens: 2000, completion_tokens: 40, total_tokens: 2040, prompt_audio_seconds: 60, prompt_tokens_details: { cached_tokens: 0 } }
    answer(s.upstream, { id: 'c1', object: 'chat.completion', created: 1787866434, model: 'voxtral-small-latest', choices: [{ index: 0, finish_reason: 'stop', message: { role: 'assistant', content: 'OK' } }], usage })
    const row = await recorded(s.t, () => postJson(`${s.t.url}/mistral/v1/chat/completions`, { model: 'voxtral-small-latest', messages: [] }, { authorization: KEY }))
    expect(row).toMatchObject({ provider: 'mistral', endpoint: 'chat.completions', input_tokens: 2000, output_tokens: 40, priced: 1 })
    expect(row.cost_usd).toBe(calcPrice({ input_tokens: 2000, output_tokens: 40 }, 'voxtral-small-latest', { providerId: 'mistral', timestamp: new Date(row.ts) })!.total_price)
  })
})

/** Mistral's OCR answer (docs.mistral.ai, `POST /v1/ocr`): its pages, and what it billed in `usage_info`. */
function ocrAnswer(model: string, pages: number) {
  return {
    pages: Array.from({ length: pages }, (_, index) => ({ index, markdown: `# Page ${index + 1}`, images: [], dimensions: { dpi: 200, height: 2200, width: 1700 } })),
    model,
    usage_info: { pages_processed: pages, doc_size_bytes: 3002783 },
    document_annotation: null,
    object: 'ocr',
  }
}

describe('Mistral OCR (Document AI)', () => {
  it('billed by the page: the pages its usage_info reports are priced at the model’s rate per page', async () => {
    answer(s.upstream, ocrAnswer('mistral-ocr-2505-completion', 29))
    const row = await recorded(s.t, () =>
      postJson(`${s.t.url}/mistral/v1/ocr`, { model: 'mistral-ocr-2505', document: { type: 'document_url', document_url: 'https://arxiv.org/pdf/2201.04234' }, include_image_base64: false }, { authorization: KEY }),
    )
    expect(s.upstream.requests[0].url).toBe('/v1/ocr')
    expect(row).toMatchObject({ provider: 'mistral', endpoint: 'ocr', model: 'mistral-ocr-2505-completion', status: 200, input_tokens: 0, output_tokens: 0, priced: 1, estimated: 0 })
    const expected = calcPrice({ input_tokens: 0, output_tokens: 0, input_document_pages: 29 } as any, 'mistral-ocr-2505-completion', { providerId: 'mistral', timestamp: new Date(row.ts) })
    expect(expected).not.toBeNull()
    expect(row.cost_usd).toBe(expected!.total_price)
    // $1 per 1,000 pages
    expect(row.cost_usd).toBeCloseTo(0.029, 12)
  })

  it('with an annotation format, at the annotated pages’ rate', async () => {
    answer(s.upstream, { ...ocrAnswer('mistral-ocr-2505-completion', 4), document_annotation: '{"title": "Page"}' })
    const row = await recorded(s.t, () =>
      postJson(
        `${s.t.url}/mistral/v1/ocr`,
        {
          model: 'mistral-ocr-2505',
          document: { type: 'document_url', document_url: 'https://arxiv.org/pdf/2201.04234' },
          document_annotation_format: { type: 'json_schema', json_schema: { name: 'doc', schema: { type: 'object', properties: { title: { type: 'string' } } } } },
        },
        { authorization: KEY },
      ),
    )
    expect(row).toMatchObject({ provider: 'mistral', endpoint: 'ocr', priced: 1 })
    const expected = calcPrice({ input_document_pages: 4, input_annotated_document_pages: 4 } as any, 'mistral-ocr-2505-completion', { providerId: 'mistral', timestamp: new Date(row.ts) })
    expect(row.cost_usd).toBe(expected!.total_price)
    // $3 per 1,000 annotated pages
    expect(row.cost_usd).toBeCloseTo(0.012, 12)
  })
})


describe('Mistral Agents API (/mistral/v1/agents/completions)', () => {
  it("is metered and priced as the model its answer names (the request names only the agent), not recorded at cost 0", async () => {
    // docs.mistral.ai "Agents Completion": POST /v1/agents/completions {agent_id, messages} answers a ChatCompletionResponse.
    answer(s.upstream, {
      id: 'cmpl-agent-1',
      object: 'chat.completion',
      created: 1787866434,
      model: 'mistral-medium-2508',
      choices: [{ index: 0, finish_reason: 'stop', message: { role: 'assistant', content: 'Done.' } }],
      usage: { prompt_tokens: 1_200, completion_tokens: 300, total_tokens: 1_500 },
    })
    const row = await recorded(s.t, () => postJson(`${s.t.url}/mistral/v1/agents/completions`, { agent_id: 'ag_0123456789', messages: [{ role: 'user', content: 'hi' }] }, { authorization: KEY }))
    expect(s.upstream.requests[0].url).toBe('/v1/agents/completions')
    expect(row).toMatchObject({ provider: 'mistral', endpoint: 'agents.completions', model: 'mistral-medium-2508', input_tokens: 1_200, output_tokens: 300, priced: 1 })
    // Mistral Medium 3.1 (mistral-medium-2508): $0.40 per 1M input tokens, $2 per 1M output tokens.
    expect(row.cost_usd).toBeCloseTo((1_200 * 0.4 + 300 * 2) / 1e6, 15)
  })

  it('a streamed agent completion takes its last chunk usage', async () => {
    const chunk = (o: object) => `data: ${JSON.stringify({ id: 'cmpl-agent-2', object: 'chat.completion.chunk', created: 1787866434, model: 'mistral-medium-2508', ...o })}\n\n`
    answer(
      s.upstream,
      chunk({ choices: [{ index: 0, delta: { role: 'assistant', content: 'Do' }, finish_reason: null }] }) +
        chunk({ choices: [{ index: 0, delta: { content: 'ne.' }, finish_reason: 'stop' }], usage: { prompt_tokens: 1_200, completion_tokens: 300, total_tokens: 1_500 } }) +
        'data: [DONE]\n\n',
      'sse',
    )
    const row = await recorded(s.t, () => postJson(`${s.t.url}/mistral/v1/agents/completions`, { agent_id: 'ag_0123456789', stream: true, messages: [] }, { authorization: KEY }))
    expect(row).toMatchObject({ endpoint: 'agents.completions', model: 'mistral-medium-2508', streamed: 1, input_tokens: 1_200, output_tokens: 300, estimated: 0, priced: 1 })
    expect(row.cost_usd).toBeCloseTo((1_200 * 0.4 + 300 * 2) / 1e6, 15)
  })
})
