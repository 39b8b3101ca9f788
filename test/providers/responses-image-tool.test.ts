import { beforeEach, describe, expect, it } from 'vitest'
import { ADMIN_CONFIG, admin } from '../admin/support'
import { fixture, fixtureJson, sseChunks } from '../support/fixtures'
import { postJson } from '../support/http'
import { serverOverMockUpstream } from '../support/server'
import { answer, libraryPrice, recorded, rows } from './ledger'

/**
 * The Responses API's built-in image_generation tool: the image is made by a GPT Image model and
 * billed at that model's output image rate, on top of the mainline model's tokens, which are all
 * the Response's `usage` counts. OpenAI's image generation guide ("Cost and latency") gives the
 * output image tokens of an image by quality and size for the models before gpt-image-2 (low
 * 1024x1024: 272; medium 1024x1536: 1,584; high 1536x1024: 6,208; high 1024x1536, the most: 6,240)
 * and bills each streamed partial image 100 more output image tokens ("Partial images cost").
 * Through a running Burnrate (real HTTP, the mock upstream replaying OpenAI's recorded answers,
 * the real SQLite ledger).
 */
const s = serverOverMockUpstream(ADMIN_CONFIG)
beforeEach(() => {
  s.upstream.requests.length = 0
})

const OPENAI = { authorization: 'Bearer sk-proj-image-tool-000000000001' }
const JSON_FIXTURE = 'openai-responses/responses-nonstream-image-generation-tool.json'
const SSE_FIXTURE = 'openai-responses/responses-stream-image-generation-tool.sse'

/** The library's price of `tokens` output image tokens of the image model `model` (OpenAI's data). */
const imagePrice = (model: string, tokens: number, ts: number) => libraryPrice('openai', { output_tokens: tokens, output_image_tokens: tokens }, model, ts)

/** The recorded JSON answer (gpt-5-nano, one low 1024x1024 image) with its image item's and echoed tool's settings changed. */
function jsonAnswer(item: Record<string, unknown>, tool: Record<string, unknown>): object {
  const body = fixtureJson(JSON_FIXTURE)
  const image = body.output.find((o: any) => o.type === 'image_generation_call')
  Object.assign(image, item)
  for (const k of Object.keys(item)) if (item[k] === undefined) delete image[k]
  Object.assign(body.tools[0], tool)
  return body
}

const post = (stream = false) =>
  postJson(`${s.t.url}/v1/responses`, { model: 'gpt-5-nano', stream, tools: [{ type: 'image_generation' }], input: 'Draw a cat.' }, OPENAI)

describe('OpenAI Responses: the image_generation tool', () => {
  it('the recorded answer: its low 1024x1024 image is billed 272 output image tokens of gpt-image-1 on top of the tokens', async () => {
    answer(s.upstream, fixture(JSON_FIXTURE))
    const row = await recorded(s.t, () => post())
    expect(row).toMatchObject({ provider: 'openai', model: 'gpt-5-nano-2025-08-07', input_tokens: 3151, output_tokens: 1970, priced: 1, estimated: 0 })
    expect(JSON.parse(row.usage_extra)).toEqual({ tool_images: { 'gpt-image-1': 272 } })
    const tokens = libraryPrice('openai', { input_tokens: 3151, output_tokens: 1970 }, 'gpt-5-nano-2025-08-07', row.ts)
    const image = imagePrice('gpt-image-1', 272, row.ts)
    // gpt-image-1's image output is $40 per million tokens: $0.01088, OpenAI's $0.011 a low square image.
    expect(image).toBeCloseTo((272 * 40) / 1e6, 15)
    expect(row.cost_usd).toBeCloseTo(tokens + image, 15)
    // Builds before this one recorded the mainline tokens alone ($0.00095), 12x short.
    expect(row.cost_usd).toBeGreaterThan(12 * tokens)
  })

  it('the recorded stream: the size the image was made at (1536x1024, the tool said auto) and its partial image are billed', async () => {
    answer(s.upstream, fixture(SSE_FIXTURE), 'sse')
    const row = await recorded(s.t, () => post(true))
    expect(row).toMatchObject({ model: 'gpt-5-2025-08-07', input_tokens: 2941, cache_read_tokens: 1920, output_tokens: 1249, streamed: 1, priced: 1, estimated: 0 })
    // Low 1536x1024: 400 tokens; one partial image: 100 more.
    expect(JSON.parse(row.usage_extra)).toEqual({ tool_images: { 'gpt-image-1': 500 } })
    const tokens = libraryPrice('openai', { input_tokens: 2941, cache_read_tokens: 1920, output_tokens: 1249 }, 'gpt-5-2025-08-07', row.ts)
    expect(row.cost_usd).toBeCloseTo(tokens + imagePrice('gpt-image-1', 500, row.ts), 15)
  })

  it('a stream cut after its image was made is estimated with the image billed', async () => {
    // Each event is sent in two chunks: the image's response.output_item.done is the 10th of 16 events,
    // and the stream is cut after the 14th, before response.completed (a reset may drop what was
    // written just before it, so not right after the image).
    const chunks = sseChunks(fixture(SSE_FIXTURE))
    s.upstream.setResponder(() => ({ status: 200, headers: { 'content-type': 'text/event-stream' }, chunks, delayMs: 1, resetAfterChunks: 28 }))
    const row = await recorded(s.t, () => post(true).catch(() => undefined))
    expect(row).toMatchObject({ streamed: 1, estimated: 1, priced: 1 })
    expect(JSON.parse(row.usage_extra)).toEqual({ tool_images: { 'gpt-image-1': 500 } })
    expect(row.cost_usd).toBeGreaterThan(imagePrice('gpt-image-1', 500, row.ts))
  })

  it("the tool's image model (tools[].model) prices the image: gpt-image-1.5 and gpt-image-1-mini at their own rates", async () => {
    answer(s.upstream, jsonAnswer({ quality: 'medium', size: '1024x1536' }, { model: 'gpt-image-1.5', quality: 'medium', size: '1024x1536' }))
    const a = await recorded(s.t, () => post())
    expect(JSON.parse(a.usage_extra)).toEqual({ tool_images: { 'gpt-image-1.5': 1584 } })
    const tokens = libraryPrice('openai', { input_tokens: 3151, output_tokens: 1970 }, 'gpt-5-nano-2025-08-07', a.ts)
    // gpt-image-1.5's image output: $32 per million tokens ($0.05 a medium portrait image).
    expect(imagePrice('gpt-image-1.5', 1584, a.ts)).toBeCloseTo((1584 * 32) / 1e6, 15)
    expect(a).toMatchObject({ priced: 1, estimated: 0 })
    expect(a.cost_usd).toBeCloseTo(tokens + imagePrice('gpt-image-1.5', 1584, a.ts), 15)

    answer(s.upstream, jsonAnswer({ quality: 'high', size: '1536x1024' }, { model: 'gpt-image-1-mini' }))
    const b = await recorded(s.t, () => post())
    expect(JSON.parse(b.usage_extra)).toEqual({ tool_images: { 'gpt-image-1-mini': 6208 } })
    expect(imagePrice('gpt-image-1-mini', 6208, b.ts)).toBeCloseTo((6208 * 8) / 1e6, 15)
    expect(b.cost_usd).toBeCloseTo(tokens + imagePrice('gpt-image-1-mini', 6208, b.ts), 15)
  })

  it('a quality or size left at auto, or an image model the table does not cover, is estimated at the most a table image costs', async () => {
    // Neither the item nor the tool says what was made: high 1024x1536, 6,240 tokens.
    answer(s.upstream, jsonAnswer({ quality: undefined, size: 'auto' }, { quality: 'auto', size: 'auto' }))
    const a = await recorded(s.t, () => post())
    expect(a).toMatchObject({ input_tokens: 3151, output_tokens: 1970, priced: 1, estimated: 1 })
    expect(JSON.parse(a.usage_extra)).toEqual({ tool_images: { 'gpt-image-1': 6240 } })
    const tokens = libraryPrice('openai', { input_tokens: 3151, output_tokens: 1970 }, 'gpt-5-nano-2025-08-07', a.ts)
    expect(a.cost_usd).toBeCloseTo(tokens + imagePrice('gpt-image-1', 6240, a.ts), 15)

    // The quality known, the size not: the largest of that quality (low: 408).
    answer(s.upstream, jsonAnswer({ quality: 'low', size: undefined }, { size: 'auto' }))
    const b = await recorded(s.t, () => post())
    expect(b).toMatchObject({ estimated: 1 })
    expect(JSON.parse(b.usage_extra)).toEqual({ tool_images: { 'gpt-image-1': 408 } })

    // A model without a published table and without a price: the most a table image costs, at gpt-image-1's price.
    answer(s.upstream, jsonAnswer({}, { model: 'gpt-image-9-preview' }))
    const c = await recorded(s.t, () => post())
    expect(c).toMatchObject({ priced: 1, estimated: 1 })
    expect(JSON.parse(c.usage_extra)).toEqual({ tool_images: { 'gpt-image-9-preview': 6240 } })
    expect(c.cost_usd).toBeCloseTo(tokens + imagePrice('gpt-image-1', 6240, c.ts), 15)
  })

  it('an image_generation_call that did not complete is not billed as an image', async () => {
    answer(s.upstream, jsonAnswer({ status: 'failed', result: null }, {}))
    const row = await recorded(s.t, () => post())
    expect(row.usage_extra).toBeNull()
    expect(row.cost_usd).toBe(libraryPrice('openai', { input_tokens: 3151, output_tokens: 1970 }, 'gpt-5-nano-2025-08-07', row.ts))
  })

  it('re-pricing charges the image again: a runtime price for the mainline model changes only its tokens', async () => {
    const model = 'gpt-5-nano-2025-08-07'
    answer(s.upstream, fixture(JSON_FIXTURE))
    const row = await recorded(s.t, () => post())
    const image = imagePrice('gpt-image-1', 272, row.ts)
    const library = row.cost_usd
    const cost = () => rows(s.t).find((r) => r.id === row.id).cost_usd
    const reprice = async () => expect((await admin(s.t.url, 'POST', `/prices/openai/${model}/reprice?all=true`)).status).toBe(200)

    expect((await admin(s.t.url, 'PUT', `/prices/openai/${model}`, { body: { input_mtok: 1, output_mtok: 2 } })).status).toBe(200)
    await reprice()
    expect(cost()).toBeCloseTo((3151 * 1 + 1970 * 2) / 1e6 + image, 15)

    expect((await admin(s.t.url, 'DELETE', `/prices/openai/${model}`)).status).toBe(204)
    await reprice()
    expect(cost()).toBe(library)
  })
})
