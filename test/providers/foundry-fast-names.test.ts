import { beforeEach, describe, expect, it } from 'vitest'
import { fixtureJson } from '../support/fixtures'
import { postJson } from '../support/http'
import { serverOverMockUpstream } from '../support/server'
import { answer, libraryPrice, recorded } from './ledger'

/**
 * A Foundry deployment is named by its user: one named `team-opus-fast` may well be a standard
 * deployment of Claude Opus 4.6. Claude's fast mode on Foundry is a model of its own whose id ends
 * in `-fast` (platform.claude.com/docs/build-with-claude/fast-mode), so a deployment name is read
 * as fast mode only when without the suffix it is a Claude model's id (`claude-…`), or when the
 * answer names a `-fast` model. Builds before this one took any name ending in `-fast` for fast
 * mode: such a standard deployment's calls were recorded and priced at Opus 4.6's fast price (6x
 * the list) and reserved so. Real HTTP on 127.0.0.1, the mock upstream replaying
 * test/fixtures/anthropic, the real SQLite ledger.
 */

const MODEL = 'claude-opus-4-6'
const DEPLOYMENT = 'team-opus-fast'
// 10,000 output tokens of Opus 4.6: $0.25 at its list ($25 per 1M), $1.50 at its fast price.
const MAX_TOKENS = 10_000
const s = serverOverMockUpstream({
  budgets: { rules: [{ api_key_pattern: 'foundry-names-budget-*', daily_limit_usd: 0.3, action: 'block', reserve: 'max_tokens' }] },
})

const URL_PATH = '/foundry/anthropic/v1/messages'
const KEY = { 'x-api-key': 'foundry-names-key-00000000000001' }

function replay(model: string, usage: Record<string, unknown> = {}): void {
  const body = fixtureJson('anthropic/messages-nonstream-basic.json')
  answer(s.upstream, { ...body, model, usage: { ...body.usage, input_tokens: 2_000, output_tokens: 300, ...usage } })
}

const post = (model: string, extra: object = {}, key = KEY) => postJson(`${s.t.url}${URL_PATH}`, { model, max_tokens: 1000, messages: [{ role: 'user', content: 'hi' }], ...extra }, key)

beforeEach(() => {
  s.upstream.requests.length = 0
})

describe('a Foundry deployment whose own name ends in -fast', () => {
  it('a standard deployment so named is recorded at the list of the model its answer names, not fast', async () => {
    replay(MODEL)
    const row = await recorded(s.t, () => post(DEPLOYMENT))
    expect(JSON.parse(s.upstream.requests[0].body.toString()).model).toBe(DEPLOYMENT)
    expect(row).toMatchObject({ provider: 'foundry', model: MODEL, input_tokens: 2_000, output_tokens: 300, priced: 1, usage_extra: null })
    expect(row.cost_usd).toBe(libraryPrice('anthropic', { input_tokens: 2_000, output_tokens: 300 }, MODEL, row.ts))
  })

  it('a block rule reserves its call at the list, not the fast price: it passes', async () => {
    replay(MODEL, { input_tokens: 5, output_tokens: 1 })
    const key = { 'x-api-key': 'foundry-names-budget-0000000001' }
    expect((await post(DEPLOYMENT, {}, key)).status).toBe(200)
    const second = await post(DEPLOYMENT, { max_tokens: MAX_TOKENS }, key)
    expect(second.status).toBe(200)
    expect(s.upstream.requests).toHaveLength(2)
  })
})
