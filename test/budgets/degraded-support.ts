import { calcPrice } from '@pydantic/genai-prices'
import type { SqlStore } from '../../src/main/storage/sql'
import { hashKey } from '../../src/main/proxy/attribution'
import { fixture } from '../support/fixtures'
import { eventually } from '../support/http'
import type { PgHarness } from '../support/pg-harness'
import { NANO_FIXTURE } from './support'

/**
 * What the tests of PostgreSQL going away or coming back with calls in flight share
 * (postgres-degraded-inflight, postgres-degraded-edit): a call whose worst case a
 * `reserve: max_tokens` rule reserves, a limit of ten and a half of them, and an upstream that
 * holds one key's calls until released.
 */
const MAX_TOKENS = 300
export const BODY = { model: 'gpt-5-nano', messages: [{ role: 'user', content: 'hi' }], max_completion_tokens: MAX_TOKENS }
// The worst case Burnrate reserves: the prompt's bytes / 3 as tokens, plus max_completion_tokens.
const WORST = calcPrice({ input_tokens: Math.ceil(Buffer.byteLength(JSON.stringify(BODY)) / 3), output_tokens: MAX_TOKENS }, 'gpt-5-nano', { providerId: 'openai' })!.total_price
export const LIMIT = WORST * 10.5
export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms))

/** Answers the calls of `held` keys only once `release()` is called; the others at once. */
export function gatedUpstream(h: PgHarness, held: string) {
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

/** Until PostgreSQL admits again: a call of a new key (`prefix` + a number) gets a spend row there. */
export async function untilPostgresAdmits(store: SqlStore, call: (key: string) => Promise<unknown>, prefix: string): Promise<void> {
  let probe = 0
  await eventually(async () => {
    const k = `${prefix}${probe++}`
    await call(k)
    return ((await store.get<{ n: number }>('SELECT count(*)::int AS n FROM budget_spend WHERE api_key_hash = @h', { h: hashKey(k) }))?.n ?? 0) > 0
  }, 30_000)
}
