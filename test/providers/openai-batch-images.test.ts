import { calcPrice } from '@pydantic/genai-prices'
import { describe, expect, it } from 'vitest'
import { RAN, line } from './batch-support'
import { eventually, request } from '../support/http'
import { fixtureJson } from '../support/fixtures'
import { serverOverMockUpstream } from '../support/server'
import { rows } from './ledger'

// OpenAI's Batch API runs image requests too (`/v1/images/generations` and `/v1/images/edits`, GPT
// Image models only: gpt-image-1.5, chatgpt-image-latest, gpt-image-1, gpt-image-1-mini; "at 50%
// lower cost", OpenAI's announcement of Batch API image support; the create-batch reference lists
// both endpoints). Their output lines hold the Images API's answer as OpenAI's reference gives it
// ("The image generation response": `{created, data, background, output_format, quality, size,
// usage}`), which names no model: the batch does (the Batch object's `model`), as the SDKs
// retrieve it just before reading its output file.

const s = serverOverMockUpstream({ timezone: 'UTC' })
const AUTH = { authorization: 'Bearer sk-test-batch-images-0001' }

/** An image answer of gpt-image-1: text and image input, image output (OpenAI's reference's usage shape). */
const image = (b64: string, created: number) => ({
  created,
  background: 'opaque',
  data: [{ b64_json: b64 }],
  output_format: 'png',
  quality: 'high',
  size: '1024x1024',
  usage: { total_tokens: 4_210, input_tokens: 50, output_tokens: 4_160, input_tokens_details: { text_tokens: 10, image_tokens: 40 } },
})
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=='
/** Images' base64 past the 16 MB a line is held whole to (several large images in one answer): the line is read by picking. */
const BIG = 'A'.repeat(17 * 1024 * 1024)

/** The Batch object of a finished image batch (OpenAI's reference, "The batch object"). */
const batch = (id: string, outputFile: string) => ({
  id, object: 'batch', endpoint: '/v1/images/generations', model: 'gpt-image-1', errors: null, input_file_id: 'file-imgin',
  completion_window: '24h', status: 'completed', output_file_id: outputFile, error_file_id: null, created_at: RAN - 60,
  completed_at: RAN + 5, request_counts: { total: 3, completed: 2, failed: 1 },
  usage: { input_tokens: 100, input_tokens_details: { cached_tokens: 0 }, output_tokens: 8_320, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 8_420 },
  metadata: null,
})

const output = (prefix: string) =>
  Buffer.from(
    [
      line(`batch_req_${prefix}1`, 'img-1', image(PNG, RAN)),
      line(`batch_req_${prefix}2`, 'img-2', image(BIG, RAN + 1)),
      line(`batch_req_${prefix}3`, 'img-3', { error: { message: 'Your request was rejected by the safety system.', type: 'image_generation_user_error' } }, 400),
    ].join('\n') + '\n',
  )

/** Half of gpt-image-1's list price for the answer's usage (text and image input, image output), at the time it ran. */
const half = (ranAt: number) =>
  calcPrice({ input_tokens: 50, input_image_tokens: 40, output_tokens: 4_160, output_image_tokens: 4_160 } as any, 'gpt-image-1', {
    providerId: 'openai',
    timestamp: new Date(ranAt * 1000),
  })!.total_price / 2

const serve = (byPath: Record<string, { type: string; body: Buffer | string }>) =>
  s.upstream.setResponder((req) => {
    const r = byPath[req.url.split('?')[0]]
    return r ? { headers: { 'content-type': r.type }, body: r.body } : { status: 404, body: '{}' }
  })

describe('OpenAI Batch API: image requests are metered from the output file', () => {
  it('each image request that succeeded is a call of the batch\'s model at half its list price, long lines too', async () => {
    serve({
      '/v1/batches/batch_img01': { type: 'application/json', body: JSON.stringify(batch('batch_img01', 'file-img01')) },
      '/v1/files/file-img01/content': { type: 'application/octet-stream', body: output('img1_') },
    })
    expect((await request(`${s.t.url}/v1/batches/batch_img01`, { headers: AUTH })).status).toBe(200)
    const r = await request(`${s.t.url}/v1/files/file-img01/content`, { headers: AUTH })
    expect(r.status).toBe(200)
    const got = (await eventually(() => {
      const b = rows(s.t).filter((c) => c.endpoint.startsWith('batch.'))
      return b.length === 2 ? b : undefined
    }))!
    expect(got.map((c) => ({ endpoint: c.endpoint, model: c.model, input_tokens: c.input_tokens, output_tokens: c.output_tokens, ts: c.ts, priced: c.priced, cost_usd: c.cost_usd }))).toEqual([
      { endpoint: 'batch.images', model: 'gpt-image-1', input_tokens: 50, output_tokens: 4_160, ts: RAN * 1000, priced: 1, cost_usd: half(RAN) },
      { endpoint: 'batch.images', model: 'gpt-image-1', input_tokens: 50, output_tokens: 4_160, ts: (RAN + 1) * 1000, priced: 1, cost_usd: half(RAN + 1) },
    ])
    // OpenAI's gpt-image-1 rates halved: text in $2.50/M, image in $5/M, image out $20/M.
    expect(got[0].cost_usd).toBeCloseTo(10 * 2.5e-6 + 40 * 5e-6 + 4_160 * 20e-6, 12)
    for (const c of got) expect(JSON.parse(c.usage_extra)).toEqual({ batch: true, extra: { output_image_tokens: 4_160, input_image_tokens: 40 } })
  })

  it('an output file whose batch was not followed through Burnrate: its image requests are recorded unpriced, not at $0 as if priced', async () => {
    serve({ '/v1/files/file-img02/content': { type: 'application/octet-stream', body: output('img2_') } })
    expect((await request(`${s.t.url}/v1/files/file-img02/content`, { headers: AUTH })).status).toBe(200)
    const got = (await eventually(() => {
      const b = rows(s.t).filter((c) => c.endpoint.startsWith('batch.') && c.model === '')
      return b.length === 2 ? b : undefined
    }))!
    for (const c of got) expect(c).toMatchObject({ endpoint: 'batch.images', input_tokens: 50, output_tokens: 4_160, priced: 0, cost_usd: 0 })
  })

  it("a Responses request whose image_generation tool made an image: the image is billed on a line too long to hold, as on any other", { timeout: 60_000 }, async () => {
    // OpenAI's recorded answer (test/fixtures: gpt-5-nano, one completed low 1024x1024 image of the
    // tool, gpt-image-1), once with its short base64 and once with one past the 16 MB a line is held
    // whole to (a response whose tool made several large images): that line is read by picking.
    const recorded = fixtureJson('openai-responses/responses-nonstream-image-generation-tool.json')
    const withImage = (b64: string, id: string) => ({
      ...recorded, id, created_at: RAN,
      output: recorded.output.map((o: any) => (o.type === 'image_generation_call' ? { ...o, result: b64 } : o)),
    })
    const file = Buffer.from([line('batch_req_tool1', 'tool-1', withImage(PNG, 'resp_tool_short')), line('batch_req_tool2', 'tool-2', withImage('A'.repeat(17 * 1024 * 1024), 'resp_tool_long'))].join('\n') + '\n')
    serve({ '/v1/files/file-tool01/content': { type: 'application/octet-stream', body: file } })
    expect((await request(`${s.t.url}/v1/files/file-tool01/content`, { headers: AUTH })).status).toBe(200)
    const got = (await eventually(() => {
      const b = rows(s.t).filter((c) => c.endpoint === 'batch.responses')
      return b.length === 2 ? b : undefined
    }))!
    // The mainline tokens at half price, the image at gpt-image-1's list output image rate (272 tokens: $0.01088).
    const mainline = calcPrice({ input_tokens: 3_151, output_tokens: 1_970 }, recorded.model, { providerId: 'openai', timestamp: new Date(RAN * 1000) })!.total_price / 2
    const image = calcPrice({ input_tokens: 0, output_tokens: 272, output_image_tokens: 272 } as any, 'gpt-image-1', { providerId: 'openai', timestamp: new Date(RAN * 1000) })!.total_price
    expect(image).toBeCloseTo(0.01088, 12)
    for (const c of got) {
      expect(c).toMatchObject({ model: recorded.model, input_tokens: 3_151, output_tokens: 1_970, priced: 1, cost_usd: mainline + image })
      expect(JSON.parse(c.usage_extra)).toEqual({ batch: true, tool_images: { 'gpt-image-1': 272 } })
    }
  })
})
