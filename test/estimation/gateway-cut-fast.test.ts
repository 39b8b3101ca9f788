import { describe, expect, it } from 'vitest'
import { recorded } from '../providers/ledger'
import { fixture } from '../support/fixtures'
import { serverOverMockUpstream } from '../support/server'
import { cutStreams } from './cut-stream'

/**
 * Claude through a gateway, asking for fast mode, its stream cut before it said what it cost:
 * Microsoft Foundry's Messages API with `speed: "fast"`, OpenRouter's Messages API with
 * `speed: "fast"` or `service_tier: "fast"` and its Chat Completions with `service_tier: "fast"`
 * (OpenRouter's fast tier). Each is reserved at the fast price, so it is estimated at it and marked
 * `"fast": true`, as a Claude API call is (./cut-before-start-fast.test.ts); builds before this one
 * estimated them at the standard price. Real HTTP on 127.0.0.1, the mock upstream cutting the
 * connection after its headers, the real SQLite ledger.
 */

const OPUS = 'claude-opus-4-6'
const SLUG = 'anthropic/claude-opus-4.6'
/** Made-up fast prices for the test (Opus 4.6's fast mode, 6x its $5 / $25), as a user sets them for each. */
const FAST = { speed: 'fast', input_mtok: 30, output_mtok: 150 }
const s = serverOverMockUpstream({ pricing: { overrides: [{ model: OPUS, ...FAST }, { model: SLUG, ...FAST }] } })
const { post } = cutStreams(s)
const PROMPT = 'Summarise the plot of a long novel in detail. '.repeat(200)
const fast = (row: any) => (row.input_tokens * FAST.input_mtok + row.output_tokens * FAST.output_mtok) / 1e6

/** The upstream's headers arrive, then the connection is reset before the stream's first event. */
function cutBeforeStart(): void {
  s.upstream.setResponder(() => ({ status: 200, headers: { 'content-type': 'text/event-stream' }, chunks: [fixture('anthropic/messages-stream-text.sse')], resetAfterChunks: 0, delayMs: 1 }))
}

async function cut(path: string, body: object, headers: Record<string, string>): Promise<any> {
  cutBeforeStart()
  return recorded(s.t, () => post(path, { max_tokens: 4096, stream: true, messages: [{ role: 'user', content: PROMPT }], ...body }, headers))
}

function expectFast(row: any, provider: string): void {
  expect(row).toMatchObject({ provider, estimated: 1, priced: 1 })
  expect(row.input_tokens).toBeGreaterThan(1000)
  expect({ cost: row.cost_usd, extra: row.usage_extra }).toEqual({ cost: expect.closeTo(fast(row), 12), extra: expect.stringContaining('"fast":true') })
}

const FOUNDRY = { 'x-api-key': 'foundry-key-cut-fast-0000000000001', 'anthropic-beta': 'fast-mode-2026-02-01' }
const OPENROUTER = { authorization: 'Bearer sk-or-v1-cut-fast-00000000000000000001' }

describe('a Claude stream through a gateway that asked for fast mode, cut before its first event', () => {
  it('Microsoft Foundry (speed: "fast") is estimated at the fast price, marked fast; one that did not ask, at the list', async () => {
    expectFast(await cut('/foundry/anthropic/v1/messages', { model: OPUS, speed: 'fast' }, FOUNDRY), 'foundry')
    const standard = await cut('/foundry/anthropic/v1/messages', { model: OPUS }, FOUNDRY)
    expect(standard).toMatchObject({ provider: 'foundry', estimated: 1, priced: 1, usage_extra: null })
  })

  it("OpenRouter's Messages API (speed: \"fast\" or service_tier: \"fast\") is estimated at the fast price, marked fast", async () => {
    expectFast(await cut('/openrouter/v1/messages', { model: SLUG, speed: 'fast' }, OPENROUTER), 'openrouter')
    expectFast(await cut('/openrouter/v1/messages', { model: SLUG, service_tier: 'fast' }, OPENROUTER), 'openrouter')
    const standard = await cut('/openrouter/v1/messages', { model: SLUG }, OPENROUTER)
    expect(standard).toMatchObject({ provider: 'openrouter', estimated: 1, priced: 1, usage_extra: null })
  })

  it("OpenRouter's Chat Completions (service_tier: \"fast\") is estimated at the fast price, marked fast", async () => {
    expectFast(await cut('/openrouter/v1/chat/completions', { model: SLUG, service_tier: 'fast' }, OPENROUTER), 'openrouter')
  })
})
