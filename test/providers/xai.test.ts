import { calcPrice } from '@pydantic/genai-prices'
import { beforeEach, describe, expect, it } from 'vitest'
import { postJson } from '../support/http'
import { serverOverMockUpstream } from '../support/server'
import { answer, recorded } from './ledger'

const s = serverOverMockUpstream()
beforeEach(() => {
  s.upstream.requests.length = 0
})

const H = { authorization: 'Bearer xai-test-000000000000001' }

/**
 * xAI bills an image by the image, not by tokens, and says what it billed:
 * https://docs.x.ai/developers/cost-tracking ("returned via a cost_in_usd_ticks field in the usage
 * object of chat completions, Responses API, image generation, and video generation responses
 * ... An image generation with "cost_in_usd_ticks": 200000000 cost $0.02").
 */
describe('xAI image generation', () => {
  it('is recorded at the charge its usage reports in ticks, though it counts no tokens', async () => {
    answer(s.upstream, {
      created: 1776527939,
      data: [{ url: 'https://imgen.x.ai/xai-imgen/xai-tmp-imgen-0000.jpeg', mime_type: 'image/jpeg', revised_prompt: '' }],
      usage: { cost_in_usd_ticks: 200_000_000 },
    })
    const row = await recorded(s.t, () =>
      postJson(`${s.t.url}/xai/v1/images/generations`, { model: 'grok-imagine-image', prompt: 'A tiny yellow cube', n: 1, response_format: 'url' }, H),
    )
    expect(s.upstream.requests[0].url).toBe('/v1/images/generations')
    expect(row).toMatchObject({ provider: 'xai', endpoint: 'images', model: 'grok-imagine-image', status: 200, input_tokens: 0, output_tokens: 0, estimated: 0, priced: 1 })
    expect(row.cost_usd).toBe(0.02)
  })
})

describe('xAI usage', () => {
  it('a prompt count that leaves out its cached tokens (cached_tokens > prompt_tokens) gets them added, priced at the cache rate', async () => {
    // grok-4-1-fast-non-reasoning reports prompt_tokens without the cached part: total_tokens =
    // prompt + cached + completion. Counts as recorded in vercel/ai's xAI usage tests (PR #12485).
    const model = 'grok-4-1-fast-non-reasoning'
    const usage = { prompt_tokens: 4142, completion_tokens: 254, total_tokens: 8724, prompt_tokens_details: { cached_tokens: 4328 } }
    answer(s.upstream, { id: 'c1', object: 'chat.completion', created: 1770774058, model, choices: [{ index: 0, message: { role: 'assistant', content: 'OK' }, finish_reason: 'stop' }], usage })
    const row = await recorded(s.t, () => postJson(`${s.t.url}/xai/v1/chat/completions`, { model, messages: [] }, H))
    expect(row).toMatchObject({ provider: 'xai', model, input_tokens: 4142 + 4328, cache_read_tokens: 4328, output_tokens: 254, priced: 1 })
    const expected = calcPrice({ input_tokens: 8470, cache_read_tokens: 4328, output_tokens: 254 }, model, { providerId: 'x-ai', timestamp: new Date(row.ts) })
    expect(expected).not.toBeNull()
    expect(row.cost_usd).toBe(expected!.total_price)
  })

  it('the same with reasoning beside completion_tokens: the reasoning is billed as output too', async () => {
    const model = 'grok-4-1-fast-reasoning'
    // total_tokens = prompt (uncached) + cached + completion + reasoning
    const usage = { prompt_tokens: 400, completion_tokens: 30, total_tokens: 400 + 1200 + 30 + 500, prompt_tokens_details: { cached_tokens: 1200 }, completion_tokens_details: { reasoning_tokens: 500 } }
    answer(s.upstream, { id: 'c2', object: 'chat.completion', created: 1770774058, model, choices: [{ index: 0, message: { role: 'assistant', content: 'OK' }, finish_reason: 'stop' }], usage })
    const row = await recorded(s.t, () => postJson(`${s.t.url}/xai/v1/chat/completions`, { model, messages: [] }, H))
    expect(row).toMatchObject({ input_tokens: 1600, cache_read_tokens: 1200, output_tokens: 530, reasoning_tokens: 500, priced: 1 })
    expect(row.cost_usd).toBe(calcPrice({ input_tokens: 1600, cache_read_tokens: 1200, output_tokens: 530 }, model, { providerId: 'x-ai', timestamp: new Date(row.ts) })!.total_price)
  })
})

