import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { eventually, postJson } from '../support/http'
import { type MockUpstream, type RecordedRequest, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'
import { callsOf } from './support'

/**
 * A call reserved at the fast price because its key's project serves it at Fast mode
 * (./priority-default.test.ts) is one that leaves its tier to the project: OpenAI's (or Azure
 * OpenAI's) with no `service_tier`, or `auto`. A Gemini call answered at its priority tier asked
 * for it by its own means (here its request's `serviceTier`): it says nothing of the key's other
 * calls, and a later flex call of the same key and model (billed at half the list) must not be
 * reserved at the priority price.
 */

const MODEL = 'gemini-2.5-flash'
// Made-up priority prices, what a user would copy from Google's pricing page: 1.8x the list.
const FAST = { model: MODEL, speed: 'fast', input_mtok: 0.54, output_mtok: 4.5 }
const OUTPUT = 2000
const PATH = `/gemini/v1beta/models/${MODEL}:generateContent`
const body = (tier: string) => ({ contents: [{ role: 'user', parts: [{ text: 'hi' }] }], generationConfig: { maxOutputTokens: OUTPUT }, serviceTier: tier })
/** About 10 flex calls' standard worst case (2,000 output tokens at $2.50 per 1M). */
const LIMIT = 0.051

let upstream: MockUpstream
let t: TestServer
/** Flex answers wait for this: until every flex call of a burst was admitted or refused, none settles (on a busy machine one settled early would free room for another). */
let flexHeld: Promise<void> = Promise.resolve()

async function respond(req: RecordedRequest) {
  const tier = (JSON.parse(req.body.toString('utf8')) as { serviceTier: string }).serviceTier
  const first = tier !== 'flex'
  if (!first) await flexHeld
  return {
    status: 200,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      candidates: [{ content: { role: 'model', parts: [{ text: 'ok' }] }, finishReason: 'STOP' }],
      usageMetadata: { promptTokenCount: 4, candidatesTokenCount: first ? 1 : OUTPUT, totalTokenCount: first ? 5 : 4 + OUTPUT, serviceTier: tier },
      modelVersion: MODEL,
    }),
  }
}

beforeAll(async () => {
  upstream = await startMockUpstream(respond)
  t = await startTestServer(
    { pricing: { overrides: [FAST] }, budgets: { rules: [{ api_key_pattern: 'AIza-tier-*', daily_limit_usd: LIMIT, action: 'block', reserve: 'max_tokens' }] } },
    upstream.url,
  )
})
afterAll(async () => {
  await t.cleanup()
  await upstream.close()
})

const call = (key: string, tier: string) => postJson(`${t.url}${PATH}`, body(tier), { 'x-goog-api-key': key })

/** One call of `key` asking for `first`, then 20 flex calls at once; how many of those were admitted. */
async function flexAfter(key: string, first: string): Promise<number> {
  expect((await call(key, first)).status).toBe(200)
  let release!: () => void
  flexHeld = new Promise<void>((r) => (release = r))
  const sent = upstream.requests.length
  let refused = 0
  const pending = Array.from({ length: 20 }, () =>
    call(key, 'flex').then((r) => {
      if (r.status !== 200) refused++
      return r
    }),
  )
  await eventually(() => expect(refused + upstream.requests.length - sent).toBe(20), 20_000)
  release()
  const replies = await Promise.all(pending)
  await eventually(() => expect(callsOf(t, key)).toHaveLength(21), 20_000)
  return replies.filter((r) => r.status === 200).length
}

describe('reserve: max_tokens, Gemini calls after one that asked for its priority tier', () => {
  it('flex calls reserve their standard worst case, as after a standard call', async () => {
    const standard = await flexAfter('AIza-tier-standard-00000000000000001', 'standard')
    const priority = await flexAfter('AIza-tier-priority-00000000000000002', 'priority')
    expect(standard).toBeGreaterThan(5)
    expect(priority).toBe(standard)
  })
})
