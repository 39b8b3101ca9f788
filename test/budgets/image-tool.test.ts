import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { eventually, postJson } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'
import { callsOf, replayJson, spentToday } from './support'

/**
 * The Responses API's image_generation tool: each image is billed as output image tokens of the
 * tool's GPT Image model, on top of the mainline model's tokens (the recorded gpt-5-nano answer:
 * $0.00095 of tokens, $0.01088 for its low 1024x1024 image). A `reserve: max_tokens` rule must
 * reserve the image too, or calls in flight together take the key far past its limit.
 */

const FIXTURE = 'openai-responses/responses-nonstream-image-generation-tool.json'
const LIMIT = 0.05
const TOOL = { type: 'image_generation', quality: 'low', size: '1024x1024' }
const BODY = { model: 'gpt-5-nano', input: 'Draw a cat on a windowsill', tools: [TOOL], max_output_tokens: 2000 }

let upstream: MockUpstream
let t: TestServer

beforeAll(async () => {
  upstream = await startMockUpstream()
  t = await startTestServer({ budgets: { rules: [{ api_key_pattern: 'sk-img-*', daily_limit_usd: LIMIT, action: 'block', reserve: 'max_tokens' }] } }, upstream.url)
})
afterAll(async () => {
  await t.cleanup()
  await upstream.close()
})

describe('reserve: max_tokens, Responses calls with the image_generation tool', () => {
  it('20 at once reserve an image each, and the spend stays within the limit', async () => {
    const key = 'sk-img-burst-aaaaaaaa-0001'
    replayJson(upstream, FIXTURE, { headerDelayMs: 300 })
    const replies = await Promise.all(Array.from({ length: 20 }, () => postJson(`${t.url}/v1/responses`, BODY, { authorization: `Bearer ${key}` })))
    await eventually(() => callsOf(t, key).length === 20, 20_000)
    const ok = replies.filter((r) => r.status === 200).length
    expect(ok).toBeGreaterThan(0)
    const each = callsOf(t, key).find((c) => c.status === 200)!.cost_usd
    expect(each).toBeGreaterThan(0.0118) // the image's $0.01088 with the tokens
    expect(spentToday(t, key)).toBeCloseTo(ok * each, 12)
    expect(spentToday(t, key)).toBeLessThanOrEqual(LIMIT)
  })
})
