import { calcPrice } from '@pydantic/genai-prices'
import { describe, expect, it } from 'vitest'
import { RAN, notMarks, storedAfter } from './batch-support'
import { eventually, request } from '../support/http'
import { serverOverMockUpstream } from '../support/server'
import { answer, rows } from './ledger'

// xAI's Batch API results (https://docs.x.ai/developers/advanced-api-usage/batch-api: "50% off
// standard pricing"), read back with `GET /v1/batches/{batch_id}/results` (paginated by
// `pagination_token`). A page, as xAI's own TypeScript SDK types it (xai-org/xai-sdk-ts
// src/types.ts, `BatchResultList`): `{results: [{batch_request_id, batch_result: {response:
// {chat_get_completion: ChatResponse} | {image_generation: GeneratedImageResponse} |
// {video_generation: VideoResponse}} | {error}}], pagination_token}`. A ChatResponse is the
// chat completion the endpoint itself answers, its `usage` carrying `cost_in_usd_ticks`, "the exact
// cost you were charged for that request ... after all applicable discounts"
// (https://docs.x.ai/developers/cost-tracking, which names chat completions, image and video
// generation responses); 1 USD is 10^10 ticks.

const s = serverOverMockUpstream({ timezone: 'UTC' })
const H = { authorization: 'Bearer xai-test-batch-results-0001' }
const BATCH = 'batch_5b2f0c1e-0000-4000-8000-00000000abcd'
const MODEL = 'grok-4-1-fast-non-reasoning'

const completion = (id: string, created: number, usage: Record<string, unknown>) => ({
  id, object: 'chat.completion', created, model: MODEL, system_fingerprint: 'fp_9c3a1f2b7d',
  choices: [{ index: 0, message: { role: 'assistant', content: 'Paris.', refusal: null }, finish_reason: 'stop' }],
  usage,
})
/** What xAI charged for the first request, as its usage reports it in ticks. */
const TICKS = 23_150_000

const PAGE = {
  results: [
    {
      batch_request_id: 'req-1',
      batch_result: { response: { chat_get_completion: completion('c0ffee01-0000-4000-8000-000000000001', RAN, {
        prompt_tokens: 210, completion_tokens: 12, total_tokens: 222,
        prompt_tokens_details: { text_tokens: 210, audio_tokens: 0, image_tokens: 0, cached_tokens: 0 },
        completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
        num_sources_used: 0, cost_in_usd_ticks: TICKS,
      }) } },
    },
    {
      batch_request_id: 'req-2',
      // Without a charge of its own: priced from its tokens at half the list price.
      batch_result: { response: { chat_get_completion: completion('c0ffee01-0000-4000-8000-000000000002', RAN + 1, {
        prompt_tokens: 1_000, completion_tokens: 400, total_tokens: 1_400,
        prompt_tokens_details: { text_tokens: 1_000, audio_tokens: 0, image_tokens: 0, cached_tokens: 0 },
      }) } },
    },
    { batch_request_id: 'req-3', batch_result: { error: 'Request failed: the model is not available for batch' } },
    {
      batch_request_id: 'req-4',
      // An image (xAI's image answer, as its /v1/images/generations gives it: no model, no tokens, its charge in ticks).
      batch_result: { response: { image_generation: {
        created: RAN + 2, data: [{ url: 'https://imgen.x.ai/xai-imgen/xai-tmp-imgen-0001.jpeg', mime_type: 'image/jpeg', revised_prompt: '' }],
        usage: { cost_in_usd_ticks: 100_000_000 },
      } } },
    },
  ],
  pagination_token: null,
}

describe("xAI Batch API: each request of a batch's results is a call of its own", () => {
  it('recorded once, at the charge its usage reports, else at half the list price; errors make no row', async () => {
    answer(s.upstream, PAGE)
    const r = await request(`${s.t.url}/xai/v1/batches/${BATCH}/results?limit=100`, { headers: H })
    expect(r.status).toBe(200)
    const got = (await eventually(() => {
      const b = rows(s.t).filter((c) => c.endpoint.startsWith('batch.'))
      return b.length === 3 ? b : undefined
    }))!
    const half = calcPrice({ input_tokens: 1_000, output_tokens: 400 }, MODEL, { providerId: 'x-ai', timestamp: new Date((RAN + 1) * 1000) })!.total_price / 2
    expect(got.map((c) => ({ provider: c.provider, endpoint: c.endpoint, model: c.model, response_id: c.response_id, input_tokens: c.input_tokens, output_tokens: c.output_tokens, ts: c.ts, priced: c.priced, cost_usd: c.cost_usd }))).toEqual([
      { provider: 'xai', endpoint: 'batch.chat.completions', model: MODEL, response_id: 'c0ffee01-0000-4000-8000-000000000001', input_tokens: 210, output_tokens: 12, ts: RAN * 1000, priced: 1, cost_usd: TICKS / 1e10 },
      { provider: 'xai', endpoint: 'batch.chat.completions', model: MODEL, response_id: 'c0ffee01-0000-4000-8000-000000000002', input_tokens: 1_000, output_tokens: 400, ts: (RAN + 1) * 1000, priced: 1, cost_usd: half },
      // Its charge is known though its answer names no model; naming no id either, it is known by the request's own.
      { provider: 'xai', endpoint: 'batch.images', model: '', response_id: `xai-batch:${BATCH}:req-4`, input_tokens: 0, output_tokens: 0, ts: (RAN + 2) * 1000, priced: 1, cost_usd: 0.01 },
    ])
    // grok-4-1-fast-non-reasoning at $0.20/M in and $0.50/M out, halved.
    expect(half).toBeCloseTo((1_000 * 0.2e-6 + 400 * 0.5e-6) / 2, 15)
    // The read itself costs nothing.
    expect(await eventually(() => rows(s.t).find((c) => c.endpoint === 'batches.results'))).toMatchObject({ cost_usd: 0 })
  })

  it('the same page read again adds nothing', async () => {
    answer(s.upstream, PAGE)
    expect((await request(`${s.t.url}/xai/v1/batches/${BATCH}/results`, { headers: H })).status).toBe(200)
    await eventually(() => rows(s.t).filter((c) => c.endpoint === 'batches.results').length === 2)
    await storedAfter(s.t, s.upstream)
    expect(notMarks(rows(s.t)).filter((c) => c.endpoint.startsWith('batch.'))).toHaveLength(3)
  })

  it('a page too large to hold whole (images as base64) records its requests all the same', { timeout: 60_000 }, async () => {
    // Over the 64 MB held whole: read by picking its ids and usage as it passes.
    const big = 'A'.repeat(65 * 1024 * 1024)
    const page = {
      results: [
        { batch_request_id: 'big-1', batch_result: { response: { image_generation: { created: RAN, data: [{ b64_json: big, mime_type: 'image/jpeg', revised_prompt: '' }], usage: { cost_in_usd_ticks: 200_000_000 } } } } },
        {
          batch_request_id: 'big-2',
          batch_result: { response: { chat_get_completion: completion('c0ffee01-0000-4000-8000-000000000003', RAN + 1, { prompt_tokens: 1_000, completion_tokens: 400, total_tokens: 1_400 }) } },
        },
      ],
      pagination_token: null,
    }
    answer(s.upstream, page)
    expect((await request(`${s.t.url}/xai/v1/batches/batch_big/results`, { headers: H })).status).toBe(200)
    const got = (await eventually(() => {
      const b = notMarks(rows(s.t)).filter((c) => c.endpoint.startsWith('batch.'))
      return b.length === 5 ? b.slice(3) : undefined
    }))!
    expect(got.map((c) => [c.endpoint, c.input_tokens, c.output_tokens, c.cost_usd])).toEqual([
      ['batch.images', 0, 0, 0.02],
      ['batch.chat.completions', 1_000, 400, calcPrice({ input_tokens: 1_000, output_tokens: 400 }, MODEL, { providerId: 'x-ai', timestamp: new Date((RAN + 1) * 1000) })!.total_price / 2],
    ])
  })
})
