import { randomBytes } from 'node:crypto'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { hashKey } from '../../src/main/proxy/attribution'
import { postJson } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'
import { CLAUDE_FIXTURE, NANO_FIXTURE, callsOf, replayJson } from './support'

/**
 * A call carries every credential it was sent with upstream, so budgets admit it only when each
 * is admitted; the recorded key is the one the provider bills.
 */
const BLOCKED = 'AIzaBlockedRealKey-0000000001'
const ALLOWED = 'sk-allowed-real-key-00000001'
const decoy = () => `decoy-${randomBytes(8).toString('hex')}`

let upstream: MockUpstream
let t: TestServer

beforeAll(async () => {
  upstream = await startMockUpstream()
  t = await startTestServer(
    {
      budgets: {
        rules: [
          { api_key_pattern: BLOCKED, daily_limit_usd: 0, action: 'block' },
          // Every other key, decoys included, gets a fresh limit of its own.
          { api_key_pattern: '*', daily_limit_usd: 100, action: 'block' },
        ],
      },
    },
    upstream.url,
  )
})
afterAll(async () => {
  await t.cleanup()
  await upstream.close()
})
beforeEach(() => {
  upstream.requests.length = 0
})

const GEMINI_BODY = { contents: [{ role: 'user', parts: [{ text: 'hi' }] }], generationConfig: { maxOutputTokens: 50 } }

describe('a decoy credential beside a blocked key', () => {
  it('Gemini ?key=<blocked> plus x-api-key: decoy is refused, every time, and nothing goes upstream', async () => {
    for (let i = 0; i < 3; i++) {
      const res = await postJson(`${t.url}/v1beta/models/gemini-2.5-flash:generateContent?key=${BLOCKED}`, GEMINI_BODY, { 'x-api-key': decoy() })
      expect(res.status).toBe(429)
      expect(res.json().error.type).toBe('budget_exceeded')
    }
    expect(upstream.requests).toHaveLength(0)
    // Recorded under the key Gemini bills (?key=), not the decoy.
    expect(callsOf(t, BLOCKED).map((r) => r.status)).toEqual([429, 429, 429])
  })

  it('a blocked key in any other place beside an allowed bearer token is refused too', async () => {
    replayJson(upstream, NANO_FIXTURE)
    for (const headers of [{ 'x-api-key': BLOCKED }, { 'x-goog-api-key': BLOCKED }, { 'api-key': BLOCKED }] as Record<string, string>[]) {
      const res = await postJson(`${t.url}/v1/chat/completions`, { model: 'gpt-5-nano', messages: [{ role: 'user', content: 'hi' }] }, {
        authorization: `Bearer ${decoy()}`,
        ...headers,
      })
      expect(res.status, JSON.stringify(headers)).toBe(429)
    }
    const viaQuery = await postJson(`${t.url}/v1/chat/completions?key=${BLOCKED}`, { model: 'gpt-5-nano', messages: [] }, { authorization: `Bearer ${ALLOWED}` })
    expect(viaQuery.status).toBe(429)
    // The parameter's name percent-encoded (`%6Bey`, `k%65y`) is still `key` to a server that
    // decodes its query, as Google's does.
    for (const name of ['%6Bey', 'k%65y', '%6B%65%79']) {
      const encoded = await postJson(`${t.url}/v1beta/models/gemini-2.5-flash:generateContent?${name}=${BLOCKED}`, GEMINI_BODY, { 'x-goog-api-key': decoy() })
      expect(encoded.status, name).toBe(429)
    }
    expect(upstream.requests).toHaveLength(0)
  })
})

describe('the recorded key is the one the provider bills', () => {
  it('OpenAI: the bearer token; Anthropic: x-api-key; both admitted, spend on the billed key only', async () => {
    replayJson(upstream, NANO_FIXTURE)
    const other = decoy()
    const oa = await postJson(`${t.url}/v1/chat/completions`, { model: 'gpt-5-nano', messages: [{ role: 'user', content: 'hi' }] }, {
      authorization: `Bearer ${ALLOWED}`,
      'x-api-key': other,
    })
    expect(oa.status).toBe(200)
    const ok = () => callsOf(t, ALLOWED).filter((r) => r.status === 200)
    expect(ok()).toHaveLength(1)
    expect(callsOf(t, other)).toHaveLength(0)

    replayJson(upstream, CLAUDE_FIXTURE)
    const bearer = decoy()
    const an = await postJson(`${t.url}/v1/messages`, { model: 'claude-sonnet-4-5', max_tokens: 50, messages: [{ role: 'user', content: 'hi' }] }, {
      'anthropic-version': '2023-06-01',
      'x-api-key': ALLOWED,
      authorization: `Bearer ${bearer}`,
    })
    expect(an.status).toBe(200)
    expect(ok()).toHaveLength(2)
    expect(callsOf(t, bearer)).toHaveLength(0)
    expect(t.server.ledger.spend.key(hashKey(ALLOWED)).day).toBeGreaterThan(0)
    expect(t.server.ledger.spend.key(hashKey(bearer)).day).toBe(0)
  })
})

describe('a call refused for another of its keys', () => {
  it('never reached the provider, so it does not count against the billed key’s requests_per_minute (as a refused one-key call does not)', async () => {
    const s = await startTestServer(
      {
        budgets: {
          rules: [
            { api_key_pattern: 'sk-billed-*', requests_per_minute: 2, action: 'block' },
            // A different rule refuses the other key.
            { api_key_pattern: 'sk-refused-*', daily_limit_usd: 0, action: 'block' },
          ],
        },
      },
      upstream.url,
    )
    try {
      replayJson(upstream, NANO_FIXTURE)
      const billed = 'sk-billed-aaaaaaaaaaaa-0001'
      const call = (extra: Record<string, string> = {}) =>
        postJson(`${s.url}/v1/chat/completions`, { model: 'gpt-5-nano', messages: [{ role: 'user', content: 'hi' }] }, { authorization: `Bearer ${billed}`, ...extra })
      for (let i = 0; i < 3; i++) {
        const res = await call({ 'x-api-key': 'sk-refused-aaaaaaaaaaaa-0001' })
        expect(res.status).toBe(429)
        expect(res.json().error.type).toBe('budget_exceeded')
      }
      expect(upstream.requests).toHaveLength(0)
      // The billed key alone: its two requests of the minute are still there.
      expect((await call()).status).toBe(200)
      expect((await call()).status).toBe(200)
      const third = await call()
      expect(third.status).toBe(429)
      expect(third.json().error).toMatchObject({ type: 'rate_limited', used: 2, limit: 2 })
    } finally {
      await s.cleanup()
    }
  })
})
