import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { postJson } from '../support/http'
import { anthropicStream, fixtureJson } from '../support/fixtures'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'
import { silentLogger } from '../../src/main/log'
import { answer, recorded } from '../providers/ledger'

/**
 * A Claude API call fast mode served (the answer's `usage.speed: "fast"`) is billed at Anthropic's
 * published fast-mode prices: Claude Opus 4.6 at 6x every standard token price
 * (platform.claude.com/docs/build-with-claude/fast-mode: $30 / $150 per MTok; $60 / $225 above
 * 200K input tokens while the standard list priced long context apart; cache writes and reads at their usual multiples of that base; the
 * data-residency 1.1x on top). The price data has standard prices only. Through a running Burnrate
 * (real HTTP on 127.0.0.1, the mock upstream replaying test/fixtures/anthropic, the real SQLite
 * ledger). A fast call with no carried fast price keeps its standard price, and the log says so
 * once per provider and model.
 */

let upstream: MockUpstream
let t: TestServer
const warnings: string[] = []

beforeAll(async () => {
  upstream = await startMockUpstream()
  t = await startTestServer(
    { budgets: { rules: [{ api_key_pattern: 'sk-ant-fastmode-budget-*', daily_limit_usd: 0.1, action: 'block', reserve: 'max_tokens' }] } },
    upstream.url,
    undefined,
    { log: { ...silentLogger, warn: (m) => warnings.push(m) } },
  )
})
afterAll(async () => {
  await t.cleanup()
  await upstream.close()
})

const KEY = { 'x-api-key': 'sk-ant-fastmode-0000000000000001' }
const OPUS = 'claude-opus-4-6'

/** The recorded answer (test/fixtures/anthropic) as `model` with `usage` (and `speed`) in place of its own. */
function replay(model: string, usage: Record<string, unknown>): void {
  const body = fixtureJson('anthropic/messages-nonstream-cache-write-and-read.json')
  answer(upstream, { ...body, model, usage: { ...body.usage, ...usage } })
}

/** 2,000 uncached input, 4,000 written to the 5-minute cache and 1,000 to the 1-hour one, 10,000 read, 800 output. */
const CACHED = {
  input_tokens: 2_000,
  cache_creation_input_tokens: 5_000,
  cache_creation: { ephemeral_5m_input_tokens: 4_000, ephemeral_1h_input_tokens: 1_000 },
  cache_read_input_tokens: 10_000,
  output_tokens: 800,
}
/** CACHED at Opus 4.6's fast prices by hand: $30 input, $37.50 5m write, $60 1h write, $3 read, $150 output per MTok. */
const CACHED_FAST_USD = (2_000 * 30 + 4_000 * 37.5 + 1_000 * 60 + 10_000 * 3 + 800 * 150) / 1e6

describe("Anthropic's fast mode", () => {
  it('a Claude Opus 4.6 call fast mode served is recorded at 6x: cache writes (5m, 1h) and reads too', async () => {
    replay(OPUS, { ...CACHED, speed: 'fast', inference_geo: 'global' })
    const row = await recorded(t, () => postJson(`${t.url}/v1/messages`, { model: OPUS, speed: 'fast', max_tokens: 1000, messages: [] }, KEY))
    expect(row).toMatchObject({ provider: 'anthropic', model: OPUS, output_tokens: 800, cache_read_tokens: 10_000, priced: 1 })
    expect(JSON.parse(row.usage_extra)).toMatchObject({ fast: true })
    expect(row.cost_usd).toBeCloseTo(CACHED_FAST_USD, 15)
    expect(warnings.filter((w) => w.includes(OPUS))).toEqual([])
  })

  it('streamed: the speed in message_start prices the whole call at 6x', async () => {
    const { output_tokens: _, ...prompt } = CACHED
    answer(upstream, anthropicStream({ id: 'msg_fast_stream', model: OPUS, usage: { ...prompt, output_tokens: 1, speed: 'fast' } }, 800), 'sse')
    const row = await recorded(t, () => postJson(`${t.url}/v1/messages`, { model: OPUS, speed: 'fast', stream: true, max_tokens: 1000, messages: [] }, KEY))
    expect(row).toMatchObject({ streamed: 1, output_tokens: 800, priced: 1 })
    expect(row.cost_usd).toBeCloseTo(CACHED_FAST_USD, 15)
  })

  it('the same call at standard speed is recorded at the list, a sixth of it', async () => {
    replay(OPUS, { ...CACHED, speed: 'standard', inference_geo: 'global' })
    const row = await recorded(t, () => postJson(`${t.url}/v1/messages`, { model: OPUS, max_tokens: 1000, messages: [] }, KEY))
    expect(row.cost_usd).toBeCloseTo(CACHED_FAST_USD / 6, 15)
  })

  it('above 200K input tokens: 6x the list of the day (flat since March 13, 2026, when the 1M context window took the standard price; $60 / $225 before)', async () => {
    replay(OPUS, { input_tokens: 250_000, cache_creation_input_tokens: 0, cache_creation: { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: 0 }, cache_read_input_tokens: 0, output_tokens: 1_000, speed: 'fast' })
    const row = await recorded(t, () => postJson(`${t.url}/v1/messages`, { model: OPUS, speed: 'fast', max_tokens: 1000, messages: [] }, KEY))
    const longContext = row.ts < Date.UTC(2026, 2, 13)
    expect(row.cost_usd).toBeCloseTo(longContext ? (250_000 * 60 + 1_000 * 225) / 1e6 : (250_000 * 30 + 1_000 * 150) / 1e6, 15)
  })

  it('US-only inference (inference_geo: us) adds its 1.1x on top of the fast price', async () => {
    replay(OPUS, { ...CACHED, speed: 'fast', inference_geo: 'us' })
    const row = await recorded(t, () => postJson(`${t.url}/v1/messages`, { model: OPUS, speed: 'fast', inference_geo: 'us', max_tokens: 1000, messages: [] }, KEY))
    expect(row.cost_usd).toBeCloseTo(CACHED_FAST_USD * 1.1, 15)
  })

  it('a model with no carried fast price keeps its standard price, and the log says so once', async () => {
    const model = 'claude-opus-5-5'
    for (let i = 0; i < 2; i++) {
      replay(model, { ...CACHED, speed: 'fast' })
      const row = await recorded(t, () => postJson(`${t.url}/v1/messages`, { model, speed: 'fast', max_tokens: 1000, messages: [] }, KEY))
      expect(JSON.parse(row.usage_extra)).toMatchObject({ fast: true })
      // Its standard list (the price data): $4 input, $5 5m write, $8 1h write, $0.20 read, $20 output per MTok.
      expect(row.cost_usd).toBeCloseTo((2_000 * 4 + 4_000 * 5 + 1_000 * 8 + 10_000 * 0.2 + 800 * 20) / 1e6, 15)
    }
    const said = warnings.filter((w) => w.includes(model))
    expect(said).toHaveLength(1)
    expect(said[0]).toContain('anthropic claude-opus-5-5 served at fast mode is priced at its standard rate, which is less than billed')
  })

  // Claude in Microsoft Foundry is billed at Anthropic's per-model token rates (Claude Consumption
  // Units converted from them: learn.microsoft.com/azure/foundry/foundry-models/concepts/claude-models-billing),
  // fast mode's with them. Builds before this one priced such a call at the standard list, a sixth
  // of the bill, said so in the log as if Foundry billed on a list of its own, and reserved it so.
  it('on Microsoft Foundry (Anthropic\'s rates) a fast call of Opus 4.6 is recorded at 6x too, with no word in the log', async () => {
    replay(OPUS, { ...CACHED, speed: 'fast' })
    const row = await recorded(t, () => postJson(`${t.url}/foundry/anthropic/v1/messages`, { model: OPUS, speed: 'fast', max_tokens: 1000, messages: [] }, { 'x-api-key': 'foundry-fastmode-key-0000000001' }))
    expect(row).toMatchObject({ provider: 'foundry', model: OPUS, priced: 1 })
    expect(JSON.parse(row.usage_extra)).toMatchObject({ fast: true })
    expect(row.cost_usd).toBeCloseTo(CACHED_FAST_USD, 15)
    expect(warnings.filter((w) => w.startsWith('pricing: foundry claude-opus-4-6'))).toEqual([])
  })

  it("on Microsoft Foundry a deployment of Opus 4.6's fast-mode model (…-fast, no speed in the request) is recorded at 6x", async () => {
    replay(`${OPUS}-fast`, CACHED)
    const row = await recorded(t, () => postJson(`${t.url}/foundry/anthropic/v1/messages`, { model: `${OPUS}-fast`, max_tokens: 1000, messages: [] }, { 'x-api-key': 'foundry-fastmode-key-0000000001' }))
    expect(row).toMatchObject({ provider: 'foundry', model: OPUS, priced: 1 })
    expect(row.cost_usd).toBeCloseTo(CACHED_FAST_USD, 15)
  })

  it("a block rule reserves a Foundry call to Opus 4.6's fast-mode deployment at the fast price: refused before it goes upstream where the standard one passes", async () => {
    const key = { 'x-api-key': 'sk-ant-fastmode-budget-0000000002' }
    const body = { model: OPUS, max_tokens: 1000, messages: [{ role: 'user', content: 'hi' }] }
    replay(OPUS, { input_tokens: 10, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 10 })
    const before = upstream.requests.length
    expect((await postJson(`${t.url}/foundry/anthropic/v1/messages`, body, key)).status).toBe(200)
    const refused = await postJson(`${t.url}/foundry/anthropic/v1/messages`, { ...body, model: `${OPUS}-fast` }, key)
    expect(refused.status).toBe(429)
    expect(refused.json().error.type).toBe('budget_exceeded')
    expect(upstream.requests.length).toBe(before + 1)
  })

  it('a block rule reserves a call asking for fast mode at the carried fast price: refused before it goes upstream where the standard one passes', async () => {
    const key = { 'x-api-key': 'sk-ant-fastmode-budget-0000000001' }
    const body = { model: OPUS, max_tokens: 1000, messages: [{ role: 'user', content: 'hi' }] }
    // Worst case at the standard price: about $0.025 (1,000 output tokens at $25 a million); at the fast price about $0.15.
    replay(OPUS, { input_tokens: 10, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 10, speed: 'standard' })
    const before = upstream.requests.length
    expect((await postJson(`${t.url}/v1/messages`, body, key)).status).toBe(200)
    const refused = await postJson(`${t.url}/v1/messages`, { ...body, speed: 'fast' }, key)
    expect(refused.status).toBe(429)
    expect(refused.json().error.type).toBe('budget_exceeded')
    expect(upstream.requests.length).toBe(before + 1)
  })
})
