import { beforeEach, describe, expect, it } from 'vitest'
import { anthropicStream, fixture, fixtureJson } from '../support/fixtures'
import { postJson } from '../support/http'
import { serverOverMockUpstream } from '../support/server'
import { answer, libraryPrice, recorded } from './ledger'

/**
 * Claude's fast mode on Microsoft Foundry: it has its own model IDs there, ending in `-fast`, and
 * the deployment sets the speed; a request goes to a deployment of the fast-mode model and leaves
 * out `speed` (platform.claude.com/docs/build-with-claude/fast-mode, its Microsoft Foundry note:
 * "fast mode has its own model IDs, which end in `-fast`. Send requests to a deployment of the
 * fast mode model, and leave out `speed`"). Builds before this one read only a body's `speed`, so
 * such a call was reserved at nothing (`claude-opus-5-5-fast` has no price in the price data, and a
 * deployment never answered reserves 0), recorded unpriced under `claude-opus-5-5-fast`, and a
 * stream cut before `message_start` estimated at no price at all. A call of a `-fast` deployment,
 * or one whose answer names a `-fast` model, is now Claude's fast mode: recorded as the model
 * without the suffix, marked fast, priced at its `speed: fast` price, reserved so, a cut one
 * estimated so; an answer whose usage says `speed: "standard"` stays at the list. Real HTTP on
 * 127.0.0.1, the mock upstream replaying test/fixtures/anthropic with the model a Foundry
 * deployment of the fast-mode model would name, the real SQLite ledger.
 */

const MODEL = 'claude-opus-5-5'
const DEPLOYMENT = `${MODEL}-fast`
/** Made-up fast prices for the test: what a user copies from Foundry's pricing. */
const FAST = { model: MODEL, speed: 'fast', input_mtok: 8, output_mtok: 40 }
// 10,000 output tokens: $0.20 at the standard list ($20 per 1M), $0.40 at the fast price.
const MAX_TOKENS = 10_000
const s = serverOverMockUpstream({
  pricing: { overrides: [FAST] },
  budgets: { rules: [{ api_key_pattern: 'foundry-fast-budget-*', daily_limit_usd: 0.3, action: 'block', reserve: 'max_tokens' }] },
})

const URL_PATH = '/foundry/anthropic/v1/messages'
const KEY = { 'x-api-key': 'foundry-fast-key-00000000000001' }
const fast = (row: any) => (row.input_tokens * FAST.input_mtok + row.output_tokens * FAST.output_mtok) / 1e6

/** The recorded answer (test/fixtures/anthropic) naming `model`, with `usage` in place of its own. */
function replay(model: string, usage: Record<string, unknown> = {}): void {
  const body = fixtureJson('anthropic/messages-nonstream-basic.json')
  answer(s.upstream, { ...body, model, usage: { ...body.usage, input_tokens: 2_000, output_tokens: 300, ...usage } })
}

const post = (model: string, extra: object = {}, key = KEY) => postJson(`${s.t.url}${URL_PATH}`, { model, max_tokens: 1000, messages: [{ role: 'user', content: 'hi' }], ...extra }, key)

beforeEach(() => {
  s.upstream.requests.length = 0
})

describe('Claude fast mode on Microsoft Foundry (a -fast model deployment)', () => {
  it('an answer of the fast-mode model is recorded as the model, marked fast, at its fast price', async () => {
    replay(DEPLOYMENT)
    const row = await recorded(s.t, () => post(DEPLOYMENT))
    expect(JSON.parse(s.upstream.requests[0].body.toString()).model).toBe(DEPLOYMENT)
    expect(row).toMatchObject({ provider: 'foundry', model: MODEL, input_tokens: 2_000, output_tokens: 300, priced: 1, estimated: 0 })
    expect(JSON.parse(row.usage_extra)).toMatchObject({ fast: true })
    expect(row.cost_usd).toBeCloseTo(fast(row), 15)
  })

  it('streamed: the same', async () => {
    answer(s.upstream, anthropicStream({ id: 'msg_foundry_fast_stream', model: DEPLOYMENT, usage: { input_tokens: 2_000, output_tokens: 1 } }, 300), 'sse')
    const row = await recorded(s.t, () => post(DEPLOYMENT, { stream: true }))
    expect(row).toMatchObject({ provider: 'foundry', model: MODEL, streamed: 1, output_tokens: 300, priced: 1 })
    expect(JSON.parse(row.usage_extra)).toMatchObject({ fast: true })
    expect(row.cost_usd).toBeCloseTo(fast(row), 15)
  })

  it('a deployment of another name whose answer names the fast-mode model is fast mode too', async () => {
    replay(DEPLOYMENT)
    const row = await recorded(s.t, () => post('team-opus'))
    expect(row).toMatchObject({ provider: 'foundry', model: MODEL, priced: 1 })
    expect(JSON.parse(row.usage_extra)).toMatchObject({ fast: true })
    expect(row.cost_usd).toBeCloseTo(fast(row), 15)
  })

  it('an answer whose usage says it was served at standard speed is at the list', async () => {
    replay(DEPLOYMENT, { speed: 'standard' })
    const row = await recorded(s.t, () => post(DEPLOYMENT))
    expect(row).toMatchObject({ provider: 'foundry', model: MODEL, priced: 1, usage_extra: null })
    expect(row.cost_usd).toBe(libraryPrice('anthropic', { input_tokens: 2_000, output_tokens: 300 }, MODEL, row.ts))
  })

  it('a stream cut before message_start is estimated at the fast price, marked fast', async () => {
    s.upstream.setResponder(() => ({ status: 200, headers: { 'content-type': 'text/event-stream' }, chunks: [fixture('anthropic/messages-stream-text.sse')], resetAfterChunks: 0, delayMs: 1 }))
    const row = await recorded(s.t, () => post(DEPLOYMENT, { stream: true, messages: [{ role: 'user', content: 'Summarise the plot of a long novel in detail. '.repeat(200) }] }).catch(() => undefined))
    expect(row).toMatchObject({ provider: 'foundry', model: MODEL, estimated: 1, priced: 1 })
    expect(row.input_tokens).toBeGreaterThan(1000)
    expect({ cost: row.cost_usd, extra: row.usage_extra }).toEqual({ cost: expect.closeTo(fast(row), 12), extra: expect.stringContaining('"fast":true') })
  })

  it('a block rule reserves a call of the fast-mode deployment at the fast price: refused before it goes upstream where the standard model passes', async () => {
    replay(MODEL, { input_tokens: 5, output_tokens: 1 })
    const key = { 'x-api-key': 'foundry-fast-budget-0000000001' }
    expect((await post(MODEL, { max_tokens: MAX_TOKENS }, key)).status).toBe(200)
    const refused = await post(DEPLOYMENT, { max_tokens: MAX_TOKENS }, key)
    expect(refused.status).toBe(429)
    expect(refused.json().error.type).toBe('budget_exceeded')
    expect(s.upstream.requests).toHaveLength(1)
  })
})
