import { calcPrice } from '@pydantic/genai-prices'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { hashKey } from '../../src/main/proxy/attribution'
import { RAN, chat, notMarks, reasoning, response, storedAfter } from './batch-support'
import { eventually, postJson, request } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'
import { rows } from './ledger'

// Azure OpenAI's Batch API (Global Batch and Data Zone Batch deployments): the requests of a batch
// run later at half of Global Standard's token prices, and their answers come back in an output
// file read with `GET /openai/v1/files/{id}/content` (or `/openai/files/{id}/content?api-version=`).
// Its lines are OpenAI's but for one thing: they carry no `id`, so a request is told apart by the
// file and its `custom_id` (Microsoft's documented example line, below, has exactly these fields).

const KEY = 'azure-batch-key-00000000000001'
const HEADERS = { 'api-key': KEY }

/** A line of an Azure output file: no `id`; `request_id`, status and body as Azure writes them. */
const azureLine = (custom: string, body: object | null, status = 200) =>
  JSON.stringify(
    body
      ? { custom_id: custom, response: { body, request_id: `660b7424-b648-4b67-addc-${custom.padStart(12, '0')}`, status_code: status }, error: null }
      : { custom_id: custom, response: null, error: { code: 'batch_expired', message: 'This request could not be executed before the completion window expired.' } },
  )

/** Azure adds its content filter's verdicts to every choice and prompt; they change nothing metered. */
const filtered = { ...chat, prompt_filter_results: [{ prompt_index: 0, content_filter_results: { hate: { filtered: false, severity: 'safe' } } }] }

const OUTPUT = Buffer.from(
  [
    azureLine('task-0', filtered),
    azureLine('task-1', reasoning),
    azureLine('task-2', null),
    azureLine('task-3', { error: { code: 'content_filter', message: 'The response was filtered' } }, 400),
    azureLine('task-4', response),
  ].join('\r\n') + '\r\n',
)

/** Half of Azure's list price for the usage, at the time the request ran, as Azure bills Global Batch. */
const half = (model: string, u: Record<string, number>, ranAt: number) => {
  const p = calcPrice(u as any, model, { providerId: 'azure', timestamp: new Date(ranAt * 1000) })
  expect(p, `Azure prices ${model}`).not.toBeNull()
  return p!.total_price / 2
}

const EXPECTED = [
  { response_id: chat.id, model: chat.model, endpoint: 'batch.chat.completions', input_tokens: 1149, cache_read_tokens: 1024, output_tokens: 353, ts: RAN * 1000,
    cost_usd: half(chat.model, { input_tokens: 1149, cache_read_tokens: 1024, output_tokens: 353 }, RAN) },
  { response_id: reasoning.id, model: reasoning.model, endpoint: 'batch.chat.completions', input_tokens: 11, cache_read_tokens: 0, output_tokens: 228, ts: (RAN + 1) * 1000,
    cost_usd: half(reasoning.model, { input_tokens: 11, output_tokens: 228 }, RAN + 1) },
  { response_id: response.id, model: response.model, endpoint: 'batch.responses', input_tokens: 11, cache_read_tokens: 0, output_tokens: 327, ts: (RAN + 2) * 1000,
    cost_usd: half(response.model, { input_tokens: 11, output_tokens: 327 }, RAN + 2) },
]

describe('Azure OpenAI Batch API: the requests in an output file are metered, once, at half the price', () => {
  let upstream: MockUpstream
  let t: TestServer

  beforeAll(async () => {
    upstream = await startMockUpstream((req) => {
      if (req.url?.includes('/files/file-out-1/content')) return { headers: { 'content-type': 'application/octet-stream' }, body: OUTPUT }
      if (req.url?.startsWith('/openai/v1/batches/')) return { headers: { 'content-type': 'application/json' }, body: JSON.stringify({ id: 'batch_e0a7ee28', object: 'batch', status: 'completed', output_file_id: 'file-out-1' }) }
      return { headers: { 'content-type': 'application/json' }, body: JSON.stringify(chat) }
    })
    // A key that has spent anything at all is over its day: only free reads may pass.
    t = await startTestServer(
      { timezone: 'UTC', providers: { azure: {} }, budgets: { rules: [{ api_key_pattern: 'azure-batch-*', daily_limit_usd: 0.000001, action: 'block' }] } },
      upstream.url,
    )
  })
  afterAll(async () => {
    await t?.cleanup()
    await upstream?.close()
  })

  const batchRows = () => notMarks(rows(t)).filter((r) => r.endpoint.startsWith('batch.'))

  it('each request that succeeded is a call priced at half the model\'s Azure price; the file passes unchanged and its read costs nothing', async () => {
    const r = await request(`${t.url}/azure/openai/v1/files/file-out-1/content`, { headers: HEADERS })
    expect(r.status).toBe(200)
    expect(r.body.equals(OUTPUT)).toBe(true)
    const got = (await eventually(() => (batchRows().length === 3 ? batchRows() : undefined)))!
    expect(got.map((c) => ({
      response_id: c.response_id, model: c.model, endpoint: c.endpoint, input_tokens: c.input_tokens, cache_read_tokens: c.cache_read_tokens,
      output_tokens: c.output_tokens, ts: c.ts, cost_usd: c.cost_usd,
    }))).toEqual(EXPECTED)
    for (const c of got) {
      expect(c).toMatchObject({ provider: 'azure', api_key_hash: hashKey(KEY), status: 200, priced: 1, estimated: 0, source: 'proxy' })
      expect(c.cost_usd).toBeGreaterThan(0)
      expect(JSON.parse(c.usage_extra)).toEqual({ batch: true })
    }
    const read = (await eventually(() => rows(t).find((c) => c.endpoint === 'files.content')))!
    expect(read).toMatchObject({ provider: 'azure', status: 200, cost_usd: 0, estimated: 0, input_tokens: 0, output_tokens: 0 })
  })

  it('the same file read again by its api-version path adds nothing', async () => {
    const r = await request(`${t.url}/azure/openai/files/file-out-1/content?api-version=2025-04-01-preview`, { headers: HEADERS })
    expect(r.status).toBe(200)
    expect(upstream.requests.at(-1)!.url).toBe('/openai/files/file-out-1/content?api-version=2025-04-01-preview')
    await eventually(() => rows(t).filter((c) => c.endpoint === 'files.content').length === 2)
    await storedAfter(t, upstream)
    expect(batchRows()).toHaveLength(3)
  })

  it('a key over its budget still follows its batch and reads its results; a model call is refused', async () => {
    const batch = await request(`${t.url}/azure/openai/v1/batches/batch_e0a7ee28`, { headers: HEADERS })
    expect(batch.status).toBe(200)
    expect((await request(`${t.url}/azure/openai/v1/files/file-out-1/content`, { headers: HEADERS })).status).toBe(200)
    const refused = await postJson(`${t.url}/azure/openai/v1/chat/completions`, { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }, HEADERS)
    expect(refused.status).toBe(429)
    expect(refused.json().error.type).toBe('budget_exceeded')
    const retrieve = (await eventually(() => rows(t).find((c) => c.endpoint === 'batches.retrieve')))!
    expect(retrieve).toMatchObject({ cost_usd: 0, estimated: 0 })
  })
})
