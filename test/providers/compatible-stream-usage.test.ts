import { calcPrice } from '@pydantic/genai-prices'
import { beforeEach, describe, expect, it } from 'vitest'
import { postJson } from '../support/http'
import { fixture } from '../support/fixtures'
import { serverOverMockUpstream } from '../support/server'
import { answer, recorded } from './ledger'
import { billedAt, hasPeakHours } from '../../src/main/pricing/deepseek-hours'

/**
 * Where the OpenAI-compatible vendors put a stream's usage, and its cache hits: each stream is
 * replayed by the mock upstream through the real proxy, and the recorded row must carry the
 * vendor's exact counts (not an estimate), priced by the vendor's own price data with the cache
 * hits at the cache-read rate. The shapes' sources: test/fixtures/SOURCES.md and the comments.
 */
const s = serverOverMockUpstream()
beforeEach(() => {
  s.upstream.requests.length = 0
})

function chunk(model: string, choices: unknown[], extra: Record<string, unknown> = {}) {
  return `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1763700000, model, choices, ...extra })}\n\n`
}

function price(providerId: string, usage: Record<string, number>, model: string, ts: number): number {
  const p = calcPrice(usage, model, { providerId, timestamp: pricedAt(providerId, model, ts) })
  expect(p, `${providerId} prices ${model}`).not.toBeNull()
  return p!.total_price
}

describe('Moonshot (Kimi) streams: the usage in the last chunk choices[0].usage', () => {
  const H = { authorization: 'Bearer sk-moonshot-test-00000001' }
  const model = 'kimi-k2-0905-preview'

  it('is read exactly, cache hits included, not estimated from the streamed text', async () => {
    // A stream without stream_options: Moonshot puts the final usage inside the finishing choice,
    // never at the top level (AstrBotDevs/AstrBot#6614: 1,336 prompt tokens, 1,280 from the cache).
    answer(s.upstream, fixture('openai-compatible/moonshot-chat-stream.sse'), 'sse')
    const row = await recorded(s.t, () => postJson(`${s.t.url}/moonshot/v1/chat/completions`, { model, stream: true, messages: [{ role: 'user', content: 'hi' }] }, H))
    expect(row).toMatchObject({ provider: 'moonshot', model, streamed: 1, input_tokens: 1336, cache_read_tokens: 1280, output_tokens: 31, estimated: 0, priced: 1 })
    expect(row.cost_usd).toBe(price('moonshotai', { input_tokens: 1336, cache_read_tokens: 1280, output_tokens: 31 }, model, row.ts))
  })

  it('with include_usage, the same usage again at the top level of a last empty chunk is counted once', async () => {
    const usage = { prompt_tokens: 2000, completion_tokens: 12, total_tokens: 2012, cached_tokens: 1536 }
    const body =
      chunk(model, [{ index: 0, delta: { role: 'assistant', content: 'Hel' }, finish_reason: null }]) +
      chunk(model, [{ index: 0, delta: { content: 'lo' }, finish_reason: 'stop', usage }]) +
      chunk(model, [], { usage }) +
      'data: [DONE]\n\n'
    answer(s.upstream, body, 'sse')
    const row = await recorded(s.t, () =>
      postJson(`${s.t.url}/moonshot/v1/chat/completions`, { model, stream: true, stream_options: { include_usage: true }, messages: [] }, H),
    )
    expect(row).toMatchObject({ streamed: 1, input_tokens: 2000, cache_read_tokens: 1536, output_tokens: 12, estimated: 0 })
    expect(row.cost_usd).toBe(price('moonshotai', { input_tokens: 2000, cache_read_tokens: 1536, output_tokens: 12 }, model, row.ts))
  })
})

describe('DeepSeek: prompt_cache_hit_tokens priced at the cache-hit rate, streamed or not', () => {
  const H = { authorization: 'Bearer sk-deepseek-00000000001' }
  const model = 'deepseek-v4-flash'
  // DeepSeek's usage (api-docs.deepseek.com, "Create Chat Completion"): prompt_tokens is
  // prompt_cache_hit_tokens + prompt_cache_miss_tokens; no prompt_tokens_details.
  const usage = { prompt_tokens: 4000, completion_tokens: 60, total_tokens: 4060, prompt_cache_hit_tokens: 3840, prompt_cache_miss_tokens: 160 }
  const billed = { input_tokens: 4000, cache_read_tokens: 3840, output_tokens: 60 }

  it('a stream whose finishing chunk carries the usage at its top level', async () => {
    const body =
      chunk(model, [{ index: 0, delta: { role: 'assistant', content: 'Hel' }, finish_reason: null }]) +
      chunk(model, [{ index: 0, delta: { content: 'lo' }, finish_reason: 'stop' }], { usage }) +
      'data: [DONE]\n\n'
    answer(s.upstream, body, 'sse')
    const row = await recorded(s.t, () => postJson(`${s.t.url}/deepseek/v1/chat/completions`, { model, stream: true, messages: [] }, H))
    expect(row).toMatchObject({ provider: 'deepseek', streamed: 1, ...billed, estimated: 0, priced: 1 })
    expect(row.cost_usd).toBe(price('deepseek', billed, model, row.ts))
    expect(row.cost_usd).toBeLessThan(price('deepseek', { input_tokens: 4000, output_tokens: 60 }, model, row.ts))
  })

  it('a stream with include_usage (the usage in a last chunk without choices), and a JSON answer', async () => {
    const body =
      chunk(model, [{ index: 0, delta: { role: 'assistant', content: 'Hello' }, finish_reason: 'stop' }], { usage: null }) +
      chunk(model, [], { usage }) +
      'data: [DONE]\n\n'
    answer(s.upstream, body, 'sse')
    const streamed = await recorded(s.t, () =>
      postJson(`${s.t.url}/deepseek/v1/chat/completions`, { model, stream: true, stream_options: { include_usage: true }, messages: [] }, H),
    )
    expect(streamed).toMatchObject({ streamed: 1, ...billed, estimated: 0 })
    expect(streamed.cost_usd).toBe(price('deepseek', billed, model, streamed.ts))

    answer(s.upstream, { id: 'c2', object: 'chat.completion', created: 1763700000, model, choices: [{ index: 0, message: { role: 'assistant', content: 'Hello' }, finish_reason: 'stop' }], usage })
    const json = await recorded(s.t, () => postJson(`${s.t.url}/deepseek/v1/chat/completions`, { model, messages: [] }, H))
    expect(json).toMatchObject({ streamed: 0, ...billed, estimated: 0 })
    expect(json.cost_usd).toBe(price('deepseek', billed, model, json.ts))
  })
})

describe('Z.ai (GLM) streams: the usage at the top level of the last chunk', () => {
  it('is read exactly, prompt_tokens_details.cached_tokens at the cache-read rate', async () => {
    // docs.z.ai, "Streaming Messages": finish_reason and usage only in the last chunk.
    const model = 'glm-5.3'
    const usage = { prompt_tokens: 3000, completion_tokens: 25, total_tokens: 3025, prompt_tokens_details: { cached_tokens: 2048 } }
    const body =
      chunk(model, [{ index: 0, delta: { role: 'assistant', reasoning_content: 'Think.' } }]) +
      chunk(model, [{ index: 0, delta: { content: 'Hi' } }]) +
      chunk(model, [{ index: 0, delta: {}, finish_reason: 'stop' }], { usage }) +
      'data: [DONE]\n\n'
    answer(s.upstream, body, 'sse')
    const row = await recorded(s.t, () => postJson(`${s.t.url}/zai/v1/chat/completions`, { model, stream: true, messages: [] }, { authorization: 'Bearer zai-test-000000000001' }))
    expect(row).toMatchObject({ provider: 'zai', streamed: 1, input_tokens: 3000, cache_read_tokens: 2048, output_tokens: 25, estimated: 0, priced: 1 })
    expect(row.cost_usd).toBe(price('zai', { input_tokens: 3000, cache_read_tokens: 2048, output_tokens: 25 }, model, row.ts))
  })
})

/** The time the library is asked for: a DeepSeek call's whose prices have its peak hours, as Burnrate prices them (src/main/pricing/deepseek-hours.ts). */
function pricedAt(providerId: string, model: string, ts: number): Date {
  const at = new Date(ts)
  if (providerId !== 'deepseek') return at
  const table = calcPrice({ input_tokens: 1 }, model, { providerId, timestamp: at })?.model
  return table && hasPeakHours(table) ? billedAt(at) : at
}
