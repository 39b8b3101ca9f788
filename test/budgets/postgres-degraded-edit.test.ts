import { calcPrice } from '@pydantic/genai-prices'
import { describe, expect, it } from 'vitest'
import { hashKey } from '../../src/main/proxy/attribution'
import { ADMIN_CONFIG, admin } from '../admin/support'
import { fixture } from '../support/fixtures'
import { eventually, postJson } from '../support/http'
import { usePostgres } from '../support/pg-harness'
import { NANO_FIXTURE, pgBudgetServer } from './support'

/**
 * Calls decided in process while PostgreSQL was away, still in flight once it is back, count in
 * its admissions (postgres-degraded-inflight.test.ts), and so they must after the rule's scope is
 * edited: the edited rule carries the key's calls in flight over (README, Budgets). Before, they
 * were held by the rule's scope as well as its pattern, so the edited rule's admissions counted
 * none of them, and the key got its whole limit again.
 */
const h = usePostgres()
const MAX_TOKENS = 300
const BODY = { model: 'gpt-5-nano', messages: [{ role: 'user', content: 'hi' }], max_completion_tokens: MAX_TOKENS }
// The worst case Burnrate reserves: the prompt's bytes / 3 as tokens, plus max_completion_tokens.
const WORST = calcPrice({ input_tokens: Math.ceil(Buffer.byteLength(JSON.stringify(BODY)) / 3), output_tokens: MAX_TOKENS }, 'gpt-5-nano', { providerId: 'openai' })!.total_price
const LIMIT = WORST * 10.5
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms))
const CONFIG = { budgets: { rules: [{ api_key_pattern: 'sk-degedit-*', model_pattern: 'gpt-5-nano*', daily_limit_usd: LIMIT, action: 'block', reserve: 'max_tokens' }] }, ...ADMIN_CONFIG }

/** Answers the calls of `held` keys only once `release()` is called; the others at once. */
function gatedUpstream(held: string) {
  let release!: () => void
  const gate = new Promise<void>((r) => (release = r))
  const body = fixture(NANO_FIXTURE)
  h.upstream.setResponder(async (req) => {
    if (String(req.headers.authorization).includes(held)) await gate
    return { status: 200, headers: { 'content-type': 'application/json' }, body }
  })
  const seen = () => h.upstream.requests.filter((r) => String(r.headers.authorization).includes(held)).length
  return { release, seen }
}

describe('PostgreSQL back, then the rule edited, while calls decided in process are in flight', () => {
  it("the edited rule's admissions still count them", async () => {
    const db = h.database()
    const a = await pgBudgetServer(h, db, CONFIG)
    const store = h.store(db)
    const key = 'sk-degedit-aaaaaaaa-01'
    const up = gatedUpstream(key)
    const call = (k = key) => postJson(`${a.url}/v1/chat/completions`, BODY, { authorization: `Bearer ${k}` })
    h.pg.stopServer()
    let first: ReturnType<typeof call>[]
    try {
      first = Array.from({ length: 10 }, () => call())
      await eventually(() => up.seen() === 10, 20_000)
      expect((await call()).status).toBe(429)
    } finally {
      h.pg.startServer()
    }
    // Until PostgreSQL admits again: a call of a new key gets a spend row there.
    let probe = 0
    await eventually(async () => {
      const k = `sk-degedit-probe-aaaaaaaa-${probe++}`
      await call(k)
      return ((await store.get<{ n: number }>('SELECT count(*)::int AS n FROM budget_spend WHERE api_key_hash = @h', { h: hashKey(k) }))?.n ?? 0) > 0
    }, 30_000)
    // Widened: the calls in flight are still the rule's calls.
    const put = await admin(a.url, 'POST', '/budgets/rules', {
      body: { api_key_pattern: 'sk-degedit-*', model_pattern: 'gpt-5*', daily_limit_usd: LIMIT, action: 'block', reserve: 'max_tokens' },
    })
    expect(put.status).toBeLessThan(300)
    // Refused at once (an admitted one would wait on the held upstream).
    const second = await Promise.race([Promise.all(Array.from({ length: 10 }, () => call())), sleep(15_000).then(() => null)])
    up.release()
    expect(second?.map((r) => r.status)).toEqual(new Array(10).fill(429))
    expect((await Promise.all(first)).map((r) => r.status)).toEqual(new Array(10).fill(200))
    expect(up.seen()).toBe(10)
  }, 90_000)
})
