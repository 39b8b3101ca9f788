import { request as httpRequest } from 'node:http'
import { calcPrice, extractUsage, findProvider, type Provider } from '@pydantic/genai-prices'
import Database from 'better-sqlite3'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ADMIN_CONFIG, admin } from '../admin/support'
import { fixture } from '../support/fixtures'
import { postJson } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'
import { answer, geminiMultimodalAnswer, geminiVoiceTurn, recorded } from '../providers/ledger'

/**
 * Re-pricing (`POST /api/admin/prices/{provider}/{model}/reprice?all=true`) prices a past call
 * from what it was billed for, not its token columns alone: its web and file searches, its
 * modality splits (Gemini audio and image tokens), whisper's seconds of audio, and the charge
 * the provider itself reported, all kept in `calls.usage_extra` when the call was recorded.
 */

let upstream: MockUpstream
let t: TestServer

beforeAll(async () => {
  upstream = await startMockUpstream()
  t = await startTestServer(ADMIN_CONFIG, upstream.url)
})
afterAll(async () => {
  await t.cleanup()
  await upstream.close()
})

function row(id: number): any {
  const db = new Database(t.dbFile, { readonly: true })
  try {
    return db.prepare('SELECT * FROM calls WHERE id = ?').get(id)
  } finally {
    db.close()
  }
}

async function reprice(provider: string, model: string): Promise<any> {
  const r = await admin(t.url, 'POST', `/prices/${provider}/${encodeURIComponent(model).replace(/%2F/g, '/')}/reprice?all=true`)
  expect(r.status).toBe(200)
  return r.json()
}

/** The library's price of `usage`, from its own data or a one-model table (as a runtime price is applied). */
function libraryPrice(usage: Record<string, number>, model: string, ts: number, opts: { providerId?: string; provider?: Provider }): number {
  const p = calcPrice(usage, model, { ...opts, timestamp: new Date(ts) })
  expect(p).not.toBeNull()
  return p!.total_price
}

function runtimeTable(model: string, prices: Record<string, number>): Provider {
  return { id: 'runtime', name: 'runtime', api_pattern: '.*', models: [{ id: model, match: { equals: model }, prices }] } as Provider
}

describe('re-pricing keeps what a call was billed beyond its token columns', () => {
  it('a Responses call with a web search keeps its search fee; a runtime price and its removal re-price it exactly', async () => {
    const model = 'gpt-5-2025-08-07'
    answer(upstream, fixture('openai-responses/responses-stream-cached-reasoning.sse'), 'sse')
    const first = await recorded(t, () => postJson(`${t.url}/v1/responses`, { model, stream: true, input: 'hi' }, { authorization: 'Bearer sk-test-usage-extra-000000001' }))
    // The counts test/fixtures/README.md gives, and one web_search_call item.
    const full = { input_tokens: 9463, cache_read_tokens: 8320, output_tokens: 582, web_searches: 1 }
    expect(first).toMatchObject({ model, input_tokens: 9463, cache_read_tokens: 8320, output_tokens: 582, priced: 1 })
    expect(JSON.parse(first.usage_extra)).toEqual({ web_searches: 1 })
    const library = libraryPrice(full, model, first.ts, { providerId: 'openai' })
    expect(first.cost_usd).toBe(library)
    // gpt-5: $1.25 input, $0.125 cached, $10 output per million tokens, $10 per 1,000 searches.
    expect(library).toBeCloseTo(((9463 - 8320) * 1.25 + 8320 * 0.125 + 582 * 10) / 1e6 + 10 / 1000, 15)

    // Nothing changed in the prices: re-pricing every call changes no call (main dropped the search: ~half the cost).
    expect(await reprice('openai', model)).toMatchObject({ repriced: 0, unpriced: 0 })
    expect(row(first.id).cost_usd).toBe(library)

    // A runtime price is per token (README): the call is priced at it.
    const prices = { input_mtok: 2, output_mtok: 20, cache_read_mtok: 0.2 }
    expect((await admin(t.url, 'PUT', `/prices/openai/${model}`, { body: prices })).status).toBe(200)
    const setRep = await reprice('openai', model)
    expect(setRep).toMatchObject({ repriced: 1, cost_usd_before: library })
    const runtime = libraryPrice(full, model, first.ts, { provider: runtimeTable(model, prices) })
    expect(row(first.id).cost_usd).toBe(runtime)
    expect(runtime).toBeCloseTo(((9463 - 8320) * 2 + 8320 * 0.2 + 582 * 20) / 1e6, 15)

    // The price removed, re-pricing gives the call back the library's price of all it was billed for.
    expect((await admin(t.url, 'DELETE', `/prices/openai/${model}`)).status).toBe(204)
    expect(await reprice('openai', model)).toMatchObject({ repriced: 1, cost_usd_before: runtime, cost_usd_after: library })
    expect(row(first.id)).toMatchObject({ cost_usd: library, priced: 1 })
  })

  it('a Gemini call with image and audio tokens is re-priced at their own rates, as genai-prices reads the answer', async () => {
    const model = 'gemini-2.5-flash'
    const body = geminiMultimodalAnswer(model)
    // Recorded under a runtime price (per token), which is then removed.
    expect((await admin(t.url, 'PUT', `/prices/gemini/${model}`, { body: { input_mtok: 1, output_mtok: 1 } })).status).toBe(200)
    answer(upstream, body)
    const first = await recorded(t, () =>
      postJson(`${t.url}/gemini/v1beta/models/${model}:generateContent`, { contents: [{ role: 'user', parts: [{ text: 'hi' }] }] }, { 'x-goog-api-key': 'AIzaSy-test-usage-extra-0000001' }),
    )
    expect(first).toMatchObject({ input_tokens: 3_000, cache_read_tokens: 1_000, output_tokens: 500, priced: 1 })
    expect(JSON.parse(first.usage_extra).extra).toMatchObject({ input_audio_tokens: 800, output_audio_tokens: 500, cache_audio_read_tokens: 600 })
    expect((await admin(t.url, 'DELETE', `/prices/gemini/${model}`)).status).toBe(204)

    const rep = await reprice('gemini', model)
    expect(rep).toMatchObject({ repriced: 1 })
    // The oracle: the library's own reading of the same answer, priced by the library.
    const lib = extractUsage(findProvider({ providerId: 'google' })!, body)
    const want = libraryPrice(lib.usage as Record<string, number>, model, first.ts, { providerId: 'google' })
    expect(row(first.id).cost_usd).toBe(want)
    expect(rep.cost_usd_after).toBe(want)
    // By hand, 2.5 Flash: text/image $0.30/M, audio $1/M input; cached text $0.03/M, cached audio $0.10/M; output $2.50/M.
    // Uncached: 2,000 tokens of which 200 audio (800 - 600 cached), 1,800 text or image.
    expect(want).toBeCloseTo((1_800 * 0.3 + 200 * 1 + 400 * 0.03 + 600 * 0.1 + 500 * 2.5) / 1e6, 15)
    // Re-priced at the token rates only (what main did), it would cost less.
    expect(want).toBeGreaterThan(libraryPrice({ input_tokens: 3_000, cache_read_tokens: 1_000, output_tokens: 500 }, model, first.ts, { providerId: 'google' }))
  })

  it('a Gemini voice turn beside a text-only cache hit is re-priced with its audio at the audio rate', async () => {
    const model = 'gemini-2.5-flash-lite'
    const usageMetadata = geminiVoiceTurn([{ modality: 'TEXT', tokenCount: 800 }])
    expect((await admin(t.url, 'PUT', `/prices/gemini/${model}`, { body: { input_mtok: 1, output_mtok: 1 } })).status).toBe(200)
    answer(upstream, { candidates: [], usageMetadata, modelVersion: model })
    const first = await recorded(t, () =>
      postJson(`${t.url}/gemini/v1beta/models/${model}:generateContent`, { contents: [{ role: 'user', parts: [{ text: 'hi' }] }] }, { 'x-goog-api-key': 'AIzaSy-test-usage-extra-0000002' }),
    )
    expect(JSON.parse(first.usage_extra)).toEqual({ extra: { input_audio_tokens: 5_000 } })
    expect((await admin(t.url, 'DELETE', `/prices/gemini/${model}`)).status).toBe(204)
    expect(await reprice('gemini', model)).toMatchObject({ repriced: 1 })
    const want = libraryPrice({ input_tokens: 6_000, cache_read_tokens: 800, input_audio_tokens: 5_000, cache_audio_read_tokens: 0, output_tokens: 100 }, model, first.ts, { providerId: 'google' })
    expect(row(first.id).cost_usd).toBe(want)
    // 2.5 Flash-Lite: text $0.10/M, cached text $0.01/M, audio $0.30/M, output $0.40/M.
    expect(want).toBeCloseTo((200 * 0.1 + 800 * 0.01 + 5_000 * 0.3 + 100 * 0.4) / 1e6, 15)
  })

  it('whisper-1, billed by the second with no tokens, is re-priced by its duration', async () => {
    expect((await admin(t.url, 'PUT', '/prices/openai/whisper-1', { body: { input_mtok: 1, output_mtok: 1 } })).status).toBe(200)
    answer(upstream, { text: 'Hello there.', usage: { type: 'duration', seconds: 95 } })
    const first = await recorded(t, async () => expect(await postForm('/openai/v1/audio/transcriptions', 'whisper-1')).toBe(200))
    // A per-token price has nothing for seconds of audio.
    expect(first).toMatchObject({ model: 'whisper-1', input_tokens: 0, output_tokens: 0, cost_usd: 0, priced: 1 })
    expect(JSON.parse(first.usage_extra)).toEqual({ extra: { audio_seconds: 95 } })
    expect((await admin(t.url, 'DELETE', '/prices/openai/whisper-1')).status).toBe(204)

    expect(await reprice('openai', 'whisper-1')).toMatchObject({ repriced: 1, unpriced: 0 })
    const want = libraryPrice({ audio_seconds: 95 }, 'whisper-1', first.ts, { providerId: 'openai' })
    expect(row(first.id).cost_usd).toBe(want)
    // $0.006 a minute.
    expect(want).toBeCloseTo((95 / 60) * 0.006, 15)
  })

  it('an OpenRouter call keeps the charge OpenRouter reported, whatever price is set', async () => {
    const model = 'anthropic/claude-sonnet-4.5'
    const usage = { prompt_tokens: 2000, completion_tokens: 100, total_tokens: 2100, cost: 0.0123456 }
    answer(upstream, {
      id: 'gen-usage-extra-1', object: 'chat.completion', created: 1, model,
      choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }], usage,
    })
    const first = await recorded(t, () => postJson(`${t.url}/openrouter/v1/chat/completions`, { model, messages: [] }, { authorization: 'Bearer sk-or-v1-test-usage-extra-01' }))
    expect(first).toMatchObject({ cost_usd: 0.0123456, priced: 1 })
    expect(JSON.parse(first.usage_extra)).toEqual({ provider_cost_usd: 0.0123456 })

    expect((await admin(t.url, 'PUT', `/prices/openrouter/${model}`, { body: { input_mtok: 1, output_mtok: 1 } })).status).toBe(200)
    expect(await reprice('openrouter', model)).toMatchObject({ repriced: 0, unpriced: 0 })
    expect(row(first.id).cost_usd).toBe(0.0123456)

    // A call recorded while the runtime price is set is charged what OpenRouter reported too (not
    // 2,100 tokens at $1/M = $0.0021), so a later re-pricing has nothing to move.
    answer(upstream, {
      id: 'gen-usage-extra-2', object: 'chat.completion', created: 1, model,
      choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }], usage,
    })
    const second = await recorded(t, () => postJson(`${t.url}/openrouter/v1/chat/completions`, { model, messages: [] }, { authorization: 'Bearer sk-or-v1-test-usage-extra-01' }))
    expect(second).toMatchObject({ cost_usd: 0.0123456, priced: 1 })
    expect(await reprice('openrouter', model)).toMatchObject({ repriced: 0, unpriced: 0 })
    expect((await admin(t.url, 'DELETE', `/prices/openrouter/${model}`)).status).toBe(204)
    expect(await reprice('openrouter', model)).toMatchObject({ repriced: 0, unpriced: 0 })
    expect([row(first.id).cost_usd, row(second.id).cost_usd]).toEqual([0.0123456, 0.0123456])
  })

  it('a plain call stores no usage_extra', async () => {
    answer(upstream, fixture('openai-chat/chat-nonstream-cached.json'))
    const first = await recorded(t, () => postJson(`${t.url}/v1/chat/completions`, { model: 'gpt-4o-mini', messages: [] }, { authorization: 'Bearer sk-test-usage-extra-000000002' }))
    expect(first.input_tokens).toBeGreaterThan(0)
    expect(first.usage_extra).toBeNull()
  })
})

const BOUNDARY = '----burnrate-form-usage-extra'

/** An OpenAI audio transcription request (a multipart form with the model as a field). */
function postForm(path: string, model: string): Promise<number> {
  const body = Buffer.concat([
    Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="talk.mp3"\r\nContent-Type: audio/mpeg\r\n\r\n`),
    Buffer.alloc(4096, 0x55),
    Buffer.from(`\r\n--${BOUNDARY}\r\nContent-Disposition: form-data; name="model"\r\n\r\n${model}\r\n--${BOUNDARY}--\r\n`),
  ])
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      `${t.url}${path}`,
      { method: 'POST', headers: { 'content-type': `multipart/form-data; boundary=${BOUNDARY}`, 'content-length': body.length, authorization: 'Bearer sk-proj-usage-extra-000000001' } },
      (res) => {
        res.resume()
        res.on('end', () => resolve(res.statusCode ?? 0))
      },
    )
    req.on('error', reject)
    req.end(body)
  })
}
