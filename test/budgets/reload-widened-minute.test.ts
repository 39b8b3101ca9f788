import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ADMIN_CONFIG, admin } from '../admin/support'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'
import { NANO_FIXTURE, callsOf, chat, replayJson } from './support'

/**
 * A rule whose scope is widened (its `agent` edited away) counts the last minute's tokens of every
 * call it now matches, as the ledger holds them: a rule change re-reads them. When the rule had
 * counted calls of its own in that minute, the reload carried its old count over in place of the
 * ledger's (to keep what the ledger does not hold yet), and the tokens of the calls only the widened
 * scope matches were dropped: the key's next call went through past `tokens_per_minute`.
 */

/** The nano fixture's tokens: 11 in, 228 out. */
const CALL_TOKENS = 239

let upstream: MockUpstream
let t: TestServer

beforeAll(async () => {
  upstream = await startMockUpstream()
  t = await startTestServer({ ...ADMIN_CONFIG, budgets: { rules: [] } }, upstream.url)
  replayJson(upstream, NANO_FIXTURE)
})
afterAll(async () => {
  await t.cleanup()
  await upstream.close()
})

const put = (pattern: string, scope: Record<string, unknown>) =>
  admin(t.url, 'POST', '/budgets/rules', { body: { api_key_pattern: pattern, tokens_per_minute: CALL_TOKENS * 2 - 1, action: 'block', ...scope } })

/** One call from agent `beta` (no rule's), one from `alpha` when `ownCall` (the rule's); then the rule widened to every agent. */
async function widened(pattern: string, key: string, ownCall: boolean): Promise<void> {
  expect((await put(pattern, { agent: 'alpha' })).status).toBeLessThan(300)
  expect((await chat(t, key, {}, { 'x-burnrate-agent': 'beta' })).status).toBe(200)
  if (ownCall) expect((await chat(t, key, {}, { 'x-burnrate-agent': 'alpha' })).status).toBe(200)
  expect(callsOf(t, key)).toHaveLength(ownCall ? 2 : 1)
  expect((await put(pattern, {})).status).toBeLessThan(300)
}

describe("a rule's scope widened within the minute", () => {
  it("counts the tokens of the calls it now matches: a key's next call past tokens_per_minute is refused", async () => {
    const key = 'sk-widen-aaaaaaaa-0001'
    await widened('sk-widen-*', key, true)
    const next = await chat(t, key, {}, { 'x-burnrate-agent': 'alpha' })
    expect(next.status).toBe(429)
    expect(next.json().error).toMatchObject({ type: 'rate_limited', unit: 'tokens_per_minute', used: CALL_TOKENS * 2 })
  })

  it('as it does when the rule had counted no call of its own in that minute', async () => {
    const key = 'sk-widen2-aaaaaaaa-0002'
    await widened('sk-widen2-*', key, false)
    // One call's tokens: under the limit. A second call's tokens are counted when it ends.
    expect((await chat(t, key, {}, { 'x-burnrate-agent': 'alpha' })).status).toBe(200)
    const next = await chat(t, key, {}, { 'x-burnrate-agent': 'alpha' })
    expect(next.status).toBe(429)
    expect(next.json().error).toMatchObject({ type: 'rate_limited', unit: 'tokens_per_minute', used: CALL_TOKENS * 2 })
  })
})
