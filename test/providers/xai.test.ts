import { calcPrice } from '@pydantic/genai-prices'
import { beforeEach, describe, expect, it } from 'vitest'
import { eventually, postJson, request } from '../support/http'
import { serverOverMockUpstream } from '../support/server'
import { answer, recorded, rows } from './ledger'

const s = serverOverMockUpstream({
  timezone: 'UTC',
  budgets: { rules: [{ api_key_pattern: 'xai-block-*', daily_limit_usd: 100, requests_per_minute: 2, action: 'block' }] },
})
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


/**
 * xAI's Responses usage (`ModelUsage` in its OpenAPI, https://api.x.ai/api-docs/openapi.json, as
 * xai-org/xai-sdk-ts vendors it in src/generated/types.ts) has two optional charges:
 * `cost_in_usd_ticks` (10^10 to the dollar) and `cost_in_nano_usd` ("Cost in nano US dollars for
 * this request", 10^9 to the dollar); that SDK's src/usage.ts takes ticks, else nano. An answer
 * with nano alone is recorded at that charge, not estimated from its tokens.
 */
describe('xAI Responses usage with cost_in_nano_usd and no ticks', () => {
  const model = 'grok-4-fast-reasoning'
  const nano = 15_295_123
  const usage = {
    input_tokens: 1000, input_tokens_details: { cached_tokens: 0 }, output_tokens: 190, output_tokens_details: { reasoning_tokens: 150 }, total_tokens: 1190,
    num_sources_used: 0, num_server_side_tools_used: 3, server_side_tool_usage_details: { web_search_calls: 3 }, cost_in_nano_usd: nano,
  }
  const response = {
    id: 'resp_nano', object: 'response', created_at: 1770774058, status: 'completed', model,
    output: [{ type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'hi', annotations: [] }] }],
    usage,
  }

  it('is recorded at that charge, divided once', async () => {
    answer(s.upstream, response)
    const row = await recorded(s.t, () => postJson(`${s.t.url}/xai/v1/responses`, { model, input: 'news?', tools: [{ type: 'web_search' }] }, H))
    expect(row).toMatchObject({ provider: 'xai', endpoint: 'responses', input_tokens: 1000, output_tokens: 190, estimated: 0, priced: 1 })
    expect(row.cost_usd).toBe(nano / 1e9)
  })

  it('streamed: the same, from its response.completed event', async () => {
    const event = (name: string, data: unknown) => `event: ${name}\ndata: ${JSON.stringify(data)}\n\n`
    answer(s.upstream,
      event('response.created', { type: 'response.created', response: { ...response, status: 'in_progress', output: [], usage: null } }) +
      event('response.output_text.delta', { type: 'response.output_text.delta', delta: 'hi' }) +
      event('response.completed', { type: 'response.completed', response }),
      'sse')
    const row = await recorded(s.t, () => postJson(`${s.t.url}/xai/v1/responses`, { model, input: 'news?', stream: true }, H))
    expect(row).toMatchObject({ endpoint: 'responses', streamed: 1, input_tokens: 1000, output_tokens: 190, estimated: 0, priced: 1 })
    expect(row.cost_usd).toBe(nano / 1e9)
  })

  it('ticks, when both are there, are the charge', async () => {
    answer(s.upstream, { ...response, usage: { ...usage, cost_in_usd_ticks: 152_950_000, cost_in_nano_usd: 1 } })
    const row = await recorded(s.t, () => postJson(`${s.t.url}/xai/v1/responses`, { model, input: 'news?' }, H))
    expect(row.cost_usd).toBe(152_950_000 / 1e10)
  })
})

/**
 * xAI's video generation is asynchronous (https://docs.x.ai/developers/model-capabilities/video/generation):
 * `POST /v1/videos/generations` (also `/videos/edits`, `/videos/extensions`) answers only a
 * `request_id` (vercel/ai packages/xai/src/xai-video-model.ts reads nothing else from it), and
 * `GET /v1/videos/{request_id}` is polled until `status` is `done`. Only the finished answer says
 * what the video cost, per second of video ($0.05 a second at 480p): its `usage.cost_in_usd_ticks`
 * (https://docs.x.ai/developers/cost-tracking, "... image generation, and video generation
 * responses"). The finished body below is xAI's as CometAPI's reference passes it through
 * (apidoc.cometapi.com/api/video/xai/get-video-generation-results: a 1-second video, 500000000
 * ticks = $0.05); a pending one is `{ status: 'pending' }` (vercel/ai xai-video-model.test.ts).
 */
describe('xAI video generation', () => {
  const DONE = (id: string) => ({
    model: 'grok-imagine-video',
    usage: { cost_in_usd_ticks: 500_000_000 },
    video: { url: `https://vidgen.x.ai/xai-vidgen-bucket/xai-video-${id}.mp4`, duration: 1, respect_moderation: true },
    status: 'done',
  })
  /** The mock xAI: a POST creates the video `id`; its GET answers `polls` (by reference: a test moves it on). */
  const videoApi = (id: string, state: { done: boolean }) =>
    s.upstream.setResponder((req) => {
      const json = (b: unknown) => ({ status: 200, headers: { 'content-type': 'application/json' }, body: JSON.stringify(b) })
      if (req.method === 'POST') return json({ request_id: id })
      return json(state.done ? DONE(id) : { status: 'pending' })
    })
  const create = (key = H.authorization) =>
    postJson(`${s.t.url}/xai/v1/videos/generations`, { model: 'grok-imagine-video', prompt: 'A cat playing with a ball', duration: 1, resolution: '480p' }, { authorization: key })
  const poll = (id: string, key = H.authorization) => request(`${s.t.url}/xai/v1/videos/${id}`, { headers: { authorization: key } })
  const callOf = (id: string) => rows(s.t).find((r) => r.response_id === id && r.endpoint === 'videos')
  const today = async () => (await request(`${s.t.url}/api/dashboard/summary`)).json().today_spend_usd as number

  it('is recorded once, at the charge the finished answer reports, on the call that created it; the polls cost nothing', async () => {
    const id = '4b2cd27e-0b0d-3dec-c31c-7572daf74bb3'
    const state = { done: false }
    videoApi(id, state)
    const before = await today()
    const r = await create()
    expect(r.status).toBe(200)
    expect(r.json()).toEqual({ request_id: id })
    // Until its charge is known the call is neither priced nor final: never a silent $0.
    const queued = await eventually(() => callOf(id))
    expect(queued).toMatchObject({ provider: 'xai', model: 'grok-imagine-video', status: 200, cost_usd: 0, estimated: 1, priced: 0 })

    for (let i = 0; i < 3; i++) expect((await poll(id)).status).toBe(200)
    state.done = true
    const done = await poll(id)
    expect(done.json()).toMatchObject({ status: 'done', usage: { cost_in_usd_ticks: 500_000_000 } })
    // A client that reads the finished video again (its URL, later) adds nothing.
    expect((await poll(id)).status).toBe(200)

    const call = await eventually(() => {
      const c = callOf(id)
      return c && c.estimated === 0 ? c : undefined
    })
    expect(call).toMatchObject({ id: queued.id, endpoint: 'videos', model: 'grok-imagine-video', estimated: 0, priced: 1, input_tokens: 0, output_tokens: 0 })
    expect(call.cost_usd).toBe(0.05)
    const polls = await eventually(() => {
      const p = rows(s.t).filter((c) => c.endpoint === 'videos.retrieve' && c.response_id === id)
      return p.length === 5 ? p : undefined
    })
    for (const p of polls!) expect(p).toMatchObject({ provider: 'xai', cost_usd: 0, input_tokens: 0, output_tokens: 0, estimated: 0 })
    expect(rows(s.t).filter((c) => c.response_id === id && c.cost_usd > 0)).toHaveLength(1)
    await eventually(async () => Math.abs((await today()) - (before + 0.05)) < 1e-9)
  })

  it('a web page answering its POST (200 text/html: a captive portal, a block page) made no video: $0, not estimated', async () => {
    s.upstream.setResponder(() => ({ status: 200, headers: { 'content-type': 'text/html; charset=utf-8' }, body: '<!doctype html><p>Sign in to the network</p>' }))
    const n = rows(s.t).length
    const r = await create()
    expect(r.status).toBe(200)
    const call = await eventually(() => rows(s.t).slice(n).find((c) => c.endpoint === 'videos'))
    expect(call).toMatchObject({ status: 200, cost_usd: 0, estimated: 0, error: 'not_a_model_answer: text/html' })
  })

  it('a finished answer that reports no charge leaves the video estimated and unpriced, never priced at $0', async () => {
    const id = 'c7d2e9f1-3a4b-4c5d-8e6f-7a8b9c0d1e2f'
    s.upstream.setResponder((req) => {
      const json = (b: unknown) => ({ status: 200, headers: { 'content-type': 'application/json' }, body: JSON.stringify(b) })
      if (req.method === 'POST') return json({ request_id: id })
      // As vercel/ai's xai-video-model.test.ts answers a finished video: no usage.
      return json({ status: 'done', video: { url: 'https://vidgen.x.ai/output/video-001.mp4', duration: 5, respect_moderation: true }, model: 'grok-imagine-video' })
    })
    await recorded(s.t, () => create())
    await recorded(s.t, () => poll(id))
    expect(callOf(id)).toMatchObject({ cost_usd: 0, estimated: 1, priced: 0 })
  })

  it('polls are not requests a budget rule counts or refuses: only the POST that makes a video is', async () => {
    const key = 'Bearer xai-block-000000000000001'
    const id = 'b5a1c8d2-7e3f-4a90-8c61-2f4e9d0a1b3c'
    const state = { done: false }
    videoApi(id, state)
    expect((await create(key)).status).toBe(200)
    // Ten polls under a 2-requests-a-minute rule: none refused, none counted.
    for (let i = 0; i < 10; i++) expect((await poll(id, key)).status).toBe(200)
    state.done = true
    expect((await poll(id, key)).status).toBe(200)
    expect((await create(key)).status).toBe(200)
    expect((await create(key)).status).toBe(429)
  })
})
