import { calcPrice } from '@pydantic/genai-prices'
import { beforeEach, describe, expect, it } from 'vitest'
import { postJson } from '../support/http'
import { serverOverMockUpstream } from '../support/server'
import { answer, recorded } from './ledger'

/**
 * The shared fixtures hold no embeddings or images response, so these bodies are built from
 * OpenAI's API reference (Embeddings: "The embedding object"; Images: "The image generation
 * response", whose `usage` gpt-image-1 fills with input/output tokens and an input breakdown).
 */

const s = serverOverMockUpstream()
beforeEach(() => {
  s.upstream.requests.length = 0
})

const AUTH = { authorization: 'Bearer sk-proj-embed-images-000000001' }

describe('OpenAI embeddings', () => {
  it('prices prompt_tokens at the embedding rate', async () => {
    const embedding = Array.from({ length: 1536 }, (_, i) => Math.sin(i) / 10)
    answer(s.upstream, {
      object: 'list',
      data: [
        { object: 'embedding', index: 0, embedding },
        { object: 'embedding', index: 1, embedding },
      ],
      model: 'text-embedding-3-small',
      usage: { prompt_tokens: 1_000, total_tokens: 1_000 },
    })
    const row = await recorded(s.t, () => postJson(`${s.t.url}/openai/v1/embeddings`, { model: 'text-embedding-3-small', input: ['a', 'b'] }, AUTH))
    expect(s.upstream.requests[0].url).toBe('/v1/embeddings')
    expect(row).toMatchObject({ provider: 'openai', endpoint: 'embeddings', model: 'text-embedding-3-small', input_tokens: 1_000, output_tokens: 0, estimated: 0, priced: 1 })
    expect(row.cost_usd).toBe(calcPrice({ input_tokens: 1_000, output_tokens: 0 }, 'text-embedding-3-small', { providerId: 'openai', timestamp: new Date(row.ts) })!.total_price)
    // $0.02 per million tokens
    expect(row.cost_usd).toBeCloseTo(1_000 * 0.02e-6, 15)
  })

  it('a response too large to hold whole is still metered from its tail', async () => {
    // ~70 MB of vectors: more than the collector keeps, usage at the end as OpenAI sends it.
    const vec = `[${Array.from({ length: 3072 }, () => '-0.012345678').join(',')}]`
    const item = (i: number) => `{"object":"embedding","index":${i},"embedding":${vec}}`
    const parts: string[] = ['{"object":"list","data":[']
    for (let i = 0; i < 2000; i++) parts.push((i ? ',' : '') + item(i))
    parts.push('],"model":"text-embedding-3-large","usage":{"prompt_tokens":250000,"total_tokens":250000}}')
    const body = Buffer.from(parts.join(''))
    expect(body.length).toBeGreaterThan(64 * 1024 * 1024)
    answer(s.upstream, body)
    const row = await recorded(s.t, () => postJson(`${s.t.url}/openai/v1/embeddings`, { model: 'text-embedding-3-large', input: ['x'] }, AUTH))
    expect(row).toMatchObject({ model: 'text-embedding-3-large', input_tokens: 250_000, priced: 1 })
    expect(row.cost_usd).toBeCloseTo(250_000 * 0.13e-6, 15)
  }, 60_000)
})

describe('OpenAI image generation', () => {
  it('gpt-image-1: text and image input at their rates, output at the image-output rate', async () => {
    answer(s.upstream, {
      created: 1763700000,
      background: 'opaque',
      data: [{ b64_json: 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==' }],
      output_format: 'png',
      quality: 'high',
      size: '1024x1024',
      usage: { total_tokens: 4_210, input_tokens: 50, output_tokens: 4_160, input_tokens_details: { text_tokens: 10, image_tokens: 40 } },
    })
    const row = await recorded(s.t, () =>
      postJson(`${s.t.url}/openai/v1/images/generations`, { model: 'gpt-image-1', prompt: 'a lighthouse at dusk', size: '1024x1024', quality: 'high' }, AUTH),
    )
    expect(s.upstream.requests[0].url).toBe('/v1/images/generations')
    expect(row).toMatchObject({ endpoint: 'images', model: 'gpt-image-1', input_tokens: 50, output_tokens: 4_160, estimated: 0, priced: 1 })
    const lib = calcPrice({ input_tokens: 50, input_image_tokens: 40, output_tokens: 4_160, output_image_tokens: 4_160 }, 'gpt-image-1', {
      providerId: 'openai',
      timestamp: new Date(row.ts),
    })!.total_price
    expect(row.cost_usd).toBe(lib)
    // OpenAI's gpt-image-1 rates: text in $5/M, image in $10/M, image out $40/M.
    expect(row.cost_usd).toBeCloseTo(10 * 5e-6 + 40 * 10e-6 + 4_160 * 40e-6, 12)
  })

  it('gpt-image-1.5: image output tokens at the image-output rate, not the text-output rate', async () => {
    answer(s.upstream, {
      created: 1763700000,
      data: [{ b64_json: 'AAAA' }],
      usage: { total_tokens: 1_100, input_tokens: 20, output_tokens: 1_080, input_tokens_details: { text_tokens: 20, image_tokens: 0 }, output_tokens_details: { text_tokens: 24, image_tokens: 1_056 } },
    })
    const row = await recorded(s.t, () => postJson(`${s.t.url}/openai/v1/images/generations`, { model: 'gpt-image-1.5', prompt: 'a cat' }, AUTH))
    const lib = calcPrice({ input_tokens: 20, output_tokens: 1_080, output_image_tokens: 1_056 }, 'gpt-image-1.5', { providerId: 'openai', timestamp: new Date(row.ts) })!.total_price
    expect(row.cost_usd).toBe(lib)
    expect(row.cost_usd).toBeGreaterThan(calcPrice({ input_tokens: 20, output_tokens: 1_080 }, 'gpt-image-1.5', { providerId: 'openai' })!.total_price)
  })
})
