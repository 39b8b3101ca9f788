import { calcPrice } from '@pydantic/genai-prices'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { hashKey } from '../../src/main/proxy/attribution'
import { fixtureJson } from '../support/fixtures'
import { eventually, request } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'
import { storedAfter } from './batch-support'
import { rows } from './ledger'

// The Gemini Batch API: a batch built from inline requests carries its results in the answer to
// `GET /v1beta/batches/{id}` once it is done. Each result is a call, recorded once however often
// the batch is polled, at half the list price (Google's batch rate).

const KEY = 'AIza-gemini-batch-test-aaaaaaaa'
const NAME = 'batches/123abc456def'
const thoughts = fixtureJson('gemini/generate-content-thoughts.json')
const cached = fixtureJson('gemini/generate-content-cached-thoughts.json')

/** When the batch ended: a minute ago (today in UTC). */
const END_TIME = new Date(Math.max(Date.now() - 60_000, new Date().setUTCHours(0, 0, 0, 0))).toISOString()

const operation = (done: boolean) => ({
  name: NAME,
  metadata: {
    '@type': 'type.googleapis.com/google.ai.generativelanguage.v1beta.GenerateContentBatch', model: 'models/gemini-2.5-flash',
    state: done ? 'BATCH_STATE_SUCCEEDED' : 'BATCH_STATE_RUNNING', ...(done ? { endTime: END_TIME } : {}),
  },
  done,
  ...(done
    ? {
        response: {
          '@type': 'type.googleapis.com/google.ai.generativelanguage.v1beta.GenerateContentBatchOutput',
          inlinedResponses: {
            inlinedResponses: [
              { response: thoughts, metadata: { key: 'a' } },
              { error: { code: 400, message: 'Request contains an invalid argument.' }, metadata: { key: 'b' } },
              { response: cached, metadata: { key: 'c' } },
            ],
          },
        },
      }
    : {}),
})

/** A batch's results file, as `responsesFile` names it: one `{key, response}` or `{key, error}` per line. */
const FILE = Buffer.from(
  [
    { key: 'first', response: { ...thoughts, responseId: 'file-r1' } },
    { key: 'second', error: { code: 400, message: 'bad' } },
    { response: { ...cached, responseId: 'file-r3' } },
  ].map((l) => JSON.stringify(l)).join('\n') + '\n',
)

const half = (model: string, u: { input_tokens: number; output_tokens: number; cache_read_tokens?: number }) =>
  calcPrice(u as any, model, { providerId: 'google', timestamp: new Date() })!.total_price / 2

describe('Gemini Batch API: inline results recorded once, at batch prices', () => {
  let upstream: MockUpstream
  let t: TestServer
  let done = false

  beforeAll(async () => {
    upstream = await startMockUpstream((req) =>
      req.url.includes(':download')
        ? { headers: { 'content-type': 'application/octet-stream' }, body: FILE }
        : { headers: { 'content-type': 'application/json; charset=UTF-8' }, body: JSON.stringify(operation(done)) },
    )
    t = await startTestServer({ timezone: 'UTC' }, upstream.url)
  })
  afterAll(async () => {
    await t?.cleanup()
    await upstream?.close()
  })

  const poll = () => request(`${t.url}/v1beta/${NAME}`, { headers: { 'x-goog-api-key': KEY } })
  const batchRows = () => rows(t).filter((r) => r.endpoint === 'batch.generateContent')

  it('a running batch records nothing; once done, each result with usage is a call at half price, and polling again adds nothing', async () => {
    expect((await poll()).json()).toEqual(operation(false))
    done = true
    const r = await poll()
    expect(r.text).toBe(JSON.stringify(operation(true)))
    const calls = (await eventually(() => (batchRows().length === 2 ? batchRows() : undefined)))!
    expect(calls.map((c) => [c.model, c.response_id, c.input_tokens, c.cache_read_tokens, c.output_tokens, c.reasoning_tokens])).toEqual([
      ['gemini-3-pro-preview', thoughts.responseId, 9, 0, 28 + 244, 244],
      ['gemini-2.5-flash', cached.responseId, 3520, 3512, 2 + 42, 42],
    ])
    expect(calls[0].cost_usd).toBe(half('gemini-3-pro-preview', { input_tokens: 9, output_tokens: 272 }))
    expect(calls[1].cost_usd).toBe(half('gemini-2.5-flash', { input_tokens: 3520, cache_read_tokens: 3512, output_tokens: 44 }))
    for (const c of calls) expect(c).toMatchObject({ provider: 'gemini', api_key_hash: hashKey(KEY), status: 200, priced: 1, source: 'proxy', ts: Date.parse(END_TIME) })
    for (let i = 0; i < 2; i++) expect((await poll()).status).toBe(200)
    await eventually(() => rows(t).filter((c) => c.endpoint === 'batches.get').length === 4)
    await storedAfter(t, upstream)
    expect(batchRows()).toHaveLength(2)
  })

  it('a batch whose results went to a file: the download (under /download/, as Google serves it) records each result once', async () => {
    const read = (path: string) => request(`${t.url}${path}`, { headers: { 'x-goog-api-key': KEY } })
    const first = await read('/download/v1beta/files/batch-out-1:download?alt=media')
    expect(first.body.equals(FILE)).toBe(true)
    expect(upstream.requests.at(-1)!.url).toBe('/download/v1beta/files/batch-out-1:download?alt=media')
    const fileRows = () => batchRows().filter((c) => c.response_id.startsWith('file-'))
    const got = (await eventually(() => (fileRows().length === 2 ? fileRows() : undefined)))!
    expect(got.map((c) => [c.response_id, c.model, c.output_tokens])).toEqual([
      ['file-r1', 'gemini-3-pro-preview', 272],
      ['file-r3', 'gemini-2.5-flash', 44],
    ])
    expect(got[0].cost_usd).toBe(half('gemini-3-pro-preview', { input_tokens: 9, output_tokens: 272 }))
    // The same file again, through the /gemini mount and the API's own path: nothing more.
    expect((await read('/gemini/v1beta/files/batch-out-1:download?alt=media')).body.equals(FILE)).toBe(true)
    await eventually(() => rows(t).filter((c) => c.endpoint === 'files.download').length === 2)
    await storedAfter(t, upstream)
    expect(fileRows()).toHaveLength(2)
  })
})
