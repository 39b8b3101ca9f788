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
