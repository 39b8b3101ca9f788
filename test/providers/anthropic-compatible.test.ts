import { beforeEach, describe, expect, it } from 'vitest'
import { PROVIDERS } from '../../src/main/providers/registry'
import { fixture } from '../support/fixtures'
import { postJson } from '../support/http'
import { startMockUpstream } from '../support/mock-upstream'
import { serverOverMockUpstream, startTestServer } from '../support/server'
import { answer, libraryPrice, recorded } from './ledger'

/**
 * The Anthropic-compatible Messages APIs of DeepSeek, Moonshot AI (Kimi) and Z.ai (GLM), through a
 * running Burnrate over real HTTP: what Claude Code calls with `ANTHROPIC_BASE_URL` set to
 * `http://127.0.0.1:8787/deepseek/anthropic` (`…/moonshot/anthropic`, `…/zai/anthropic`) where the
 * vendor's setup has `https://api.deepseek.com/anthropic` (`https://api.moonshot.ai/anthropic`,
 * `https://api.z.ai/api/anthropic`). Each answer is the vendor's shape (test/fixtures/SOURCES.md),
 * recorded under the vendor and priced from its own prices.
 */

const s = serverOverMockUpstream()
beforeEach(() => {
  s.upstream.requests.length = 0
})

/** Claude Code with `ANTHROPIC_API_KEY` (`x-api-key`) or `ANTHROPIC_AUTH_TOKEN` (`Authorization: Bearer`). */
const API_KEY = { 'x-api-key': 'sk-vendor-test-key-000000000001', 'anthropic-version': '2023-06-01' }
const AUTH_TOKEN = { authorization: 'Bearer sk-vendor-test-token-0000000001', 'anthropic-version': '2023-06-01' }

const ask = (mount: string, model: string, headers: Record<string, string>, body: object = {}) => () =>
  postJson(`${s.t.url}${mount}/v1/messages`, { model, max_tokens: 1024, messages: [{ role: 'user', content: 'hi' }], ...body }, headers)

const VENDORS = [
  { name: 'deepseek', mount: '/deepseek/anthropic', base: 'https://api.deepseek.com/anthropic', upstreamPath: '/anthropic/v1/messages' },
  { name: 'moonshot', mount: '/moonshot/anthropic', base: 'https://api.moonshot.ai/anthropic', upstreamPath: '/anthropic/v1/messages' },
  { name: 'zai', mount: '/zai/anthropic', base: 'https://api.z.ai/api/anthropic', upstreamPath: '/api/anthropic/v1/messages' },
]

describe('Anthropic-compatible Messages APIs of DeepSeek, Moonshot and Z.ai', () => {
  it('each vendor has its real Anthropic-compatible base URL under its own provider', () => {
    for (const v of VENDORS) {
      const p = PROVIDERS.find((x) => x.name === v.name)
      expect(p, v.name).toBeDefined()
      expect(p!.anthropicApi?.defaultBaseUrl, v.name).toBe(v.base)
      expect(p!.anthropicApi?.mount, v.name).toBe(v.mount)
      expect(p!.anthropicApi?.name, v.name).toBe(v.name)
    }
  })

  it("DeepSeek: …/deepseek/anthropic reaches DeepSeek's /anthropic/v1/messages, recorded under deepseek at DeepSeek's price, its cache reads as it reports them", async () => {
    answer(s.upstream, fixture('anthropic-compatible/deepseek-messages-nonstream.json'))
    const row = await recorded(s.t, ask('/deepseek/anthropic', 'deepseek-v4-flash', API_KEY))
    expect(s.upstream.requests[0].url).toBe('/anthropic/v1/messages')
    expect(s.upstream.requests[0].headers['x-api-key']).toBe(API_KEY['x-api-key'])
    const usage = { input_tokens: 121, cache_read_tokens: 7, cache_write_tokens: 13, output_tokens: 23 }
    expect(row).toMatchObject({ provider: 'deepseek', endpoint: 'messages', model: 'deepseek-v4-flash', status: 200, ...usage, streamed: 0, estimated: 0, priced: 1 })
    expect(row.cost_usd).toBe(libraryPrice('deepseek', usage, 'deepseek-v4-flash', row.ts))
    expect(row.cost_usd).toBeGreaterThan(0)
  })

  it('DeepSeek streams: message_start carries the prompt and its cache read, message_delta the output', async () => {
    answer(s.upstream, fixture('anthropic-compatible/deepseek-messages-stream.sse'), 'sse')
    const row = await recorded(s.t, ask('/deepseek/anthropic', 'deepseek-v4-flash', AUTH_TOKEN, { stream: true }))
    expect(s.upstream.requests[0].url).toBe('/anthropic/v1/messages')
    expect(s.upstream.requests[0].headers.authorization).toBe(AUTH_TOKEN.authorization)
    const usage = { input_tokens: 121, cache_read_tokens: 7, cache_write_tokens: 13, output_tokens: 23 }
    expect(row).toMatchObject({ provider: 'deepseek', endpoint: 'messages', model: 'deepseek-v4-flash', ...usage, streamed: 1, estimated: 0, priced: 1 })
    expect(row.cost_usd).toBe(libraryPrice('deepseek', usage, 'deepseek-v4-flash', row.ts))
  })

  it("Moonshot: …/moonshot/anthropic reaches Kimi's /anthropic/v1/messages with its Bearer key, priced from Moonshot's prices", async () => {
    answer(s.upstream, fixture('anthropic-compatible/moonshot-messages-nonstream.json'))
    const row = await recorded(s.t, ask('/moonshot/anthropic', 'kimi-k2-0905-preview', AUTH_TOKEN))
    expect(s.upstream.requests[0].url).toBe('/anthropic/v1/messages')
    expect(s.upstream.requests[0].headers.authorization).toBe(AUTH_TOKEN.authorization)
    const usage = { input_tokens: 3258, cache_read_tokens: 2048, output_tokens: 52 }
    expect(row).toMatchObject({ provider: 'moonshot', endpoint: 'messages', model: 'kimi-k2-0905-preview', ...usage, estimated: 0, priced: 1 })
    expect(row.cost_usd).toBe(libraryPrice('moonshotai', usage, 'kimi-k2-0905-preview', row.ts))
  })

  it('Moonshot streams', async () => {
    answer(s.upstream, fixture('anthropic-compatible/moonshot-messages-stream.sse'), 'sse')
    const row = await recorded(s.t, ask('/moonshot/anthropic', 'kimi-k2-0905-preview', API_KEY, { stream: true }))
    expect(s.upstream.requests[0].url).toBe('/anthropic/v1/messages')
    expect(s.upstream.requests[0].headers['x-api-key']).toBe(API_KEY['x-api-key'])
    const usage = { input_tokens: 3258, cache_read_tokens: 2048, output_tokens: 52 }
    expect(row).toMatchObject({ provider: 'moonshot', endpoint: 'messages', ...usage, streamed: 1, estimated: 0, priced: 1 })
    expect(row.cost_usd).toBe(libraryPrice('moonshotai', usage, 'kimi-k2-0905-preview', row.ts))
  })

  it("Z.ai streams: message_start says 0 tokens and only the last message_delta counts them (GLM's stream), recorded at Z.ai's price", async () => {
    answer(s.upstream, fixture('anthropic-compatible/zai-messages-stream.sse'), 'sse')
    const row = await recorded(s.t, ask('/zai/anthropic', 'glm-5.3', AUTH_TOKEN, { stream: true }))
    expect(s.upstream.requests[0].url).toBe('/api/anthropic/v1/messages')
    expect(s.upstream.requests[0].headers.authorization).toBe(AUTH_TOKEN.authorization)
    const usage = { input_tokens: 14, output_tokens: 2 }
    expect(row).toMatchObject({ provider: 'zai', endpoint: 'messages', model: 'glm-5.3', ...usage, cache_read_tokens: 0, streamed: 1, estimated: 0, priced: 1 })
    expect(row.cost_usd).toBe(libraryPrice('zai', usage, 'glm-5.3', row.ts))
    expect(row.cost_usd).toBeGreaterThan(0)
  })

  it('Z.ai: a model its price data does not list (glm-4.6) is recorded with its tokens, unpriced at $0, never at another vendor\'s price', async () => {
    answer(s.upstream, fixture('anthropic-compatible/zai-messages-nonstream.json'))
    const row = await recorded(s.t, ask('/zai/anthropic', 'glm-4.6', API_KEY))
    expect(s.upstream.requests[0].url).toBe('/api/anthropic/v1/messages')
    expect(row).toMatchObject({ provider: 'zai', endpoint: 'messages', model: 'glm-4.6', input_tokens: 9, output_tokens: 3, priced: 0, cost_usd: 0 })
  })

  it('token counting is recorded at no cost', async () => {
    answer(s.upstream, { input_tokens: 42 })
    const row = await recorded(s.t, () =>
      postJson(`${s.t.url}/deepseek/anthropic/v1/messages/count_tokens`, { model: 'deepseek-chat', messages: [{ role: 'user', content: 'hi' }] }, API_KEY),
    )
    expect(s.upstream.requests[0].url).toBe('/anthropic/v1/messages/count_tokens')
    expect(row).toMatchObject({ provider: 'deepseek', endpoint: 'count_tokens', cost_usd: 0 })
  })
})

describe('configuring the Anthropic-compatible routes', () => {
  it('providers.<name>.anthropic_base_url moves the route, and enabled: false turns it off with the provider', async () => {
    const up = await startMockUpstream()
    const t = await startTestServer(
      { providers: { moonshot: { anthropic_base_url: `${up.url}/gateway/kimi` }, zai: { enabled: false } } },
      up.url,
    )
    try {
      up.setResponder(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body: fixture('anthropic-compatible/moonshot-messages-nonstream.json') }))
      const r = await postJson(`${t.url}/moonshot/anthropic/v1/messages`, { model: 'kimi-k2-0905-preview', max_tokens: 8, messages: [] }, AUTH_TOKEN)
      expect(r.status).toBe(200)
      expect(up.requests.at(-1)!.url).toBe('/gateway/kimi/v1/messages')
      const off = await postJson(`${t.url}/zai/anthropic/v1/messages`, { model: 'glm-5.3', max_tokens: 8, messages: [] }, AUTH_TOKEN)
      expect(off.status).toBe(404)
      const offCompat = await postJson(`${t.url}/zai/v1/chat/completions`, { model: 'glm-5.3', messages: [] }, AUTH_TOKEN)
      expect(offCompat.status).toBe(404)
    } finally {
      await t.cleanup()
      await up.close()
    }
  })
})
