import { calcPrice } from '@pydantic/genai-prices'
import { describe, expect, it } from 'vitest'
import { ADMIN_CONFIG, admin } from '../admin/support'
import { eventually } from '../support/http'
import { holdLock, usePostgres } from '../support/pg-harness'
import { NANO_COST, NANO_FIXTURE, chat, pgBudgetServer, replayJson } from './support'

/**
 * On PostgreSQL a call admitted before its rule's scope was edited settles on the rows of the rule
 * as it was (its cost added there, its reservation freed); the edited rule's rows get that cost
 * only when the ledger stores the call. Until then the edited rule counted neither the call's
 * reservation nor its cost, and admitted the key's next call past its block limit (README: a rule
 * change never lets a key past its limits by what it had in flight). The ledger's write is held
 * here (calls locked) to keep that moment open.
 */

const MAX_TOKENS = 300
/** The worst case the proxy reserves for one `chat()` call: body bytes / 3 as input, max tokens as output. */
const WORST = (() => {
  const body = JSON.stringify({ model: 'gpt-5-nano', messages: [{ role: 'user', content: 'hi' }], max_completion_tokens: MAX_TOKENS })
  return calcPrice({ input_tokens: Math.ceil(Buffer.byteLength(body) / 3), output_tokens: MAX_TOKENS }, 'gpt-5-nano', { providerId: 'openai' })!.total_price
})()

const h = usePostgres()

type Limits = { model_pattern?: string; daily_limit_usd?: number; window_hours?: number; window_limit_usd?: number }

/**
 * A key's call in flight under `before`; the rule edited to `after`; the first call answered while
 * the ledger cannot store it (calls locked); then the key's next call, whose worst case does not fit
 * beside the first call's real cost: refused, naming `period`.
 */
async function nextRefused(pattern: string, key: string, before: Limits, after: Limits, period: string): Promise<void> {
  expect(NANO_COST + WORST).toBeGreaterThan(LIMIT)
  const t = await pgBudgetServer(h, h.database(), { ...ADMIN_CONFIG, budgets: { rules: [] } })
  const put = (limits: Limits) =>
    admin(t.url, 'POST', '/budgets/rules', { body: { api_key_pattern: pattern, action: 'block', reserve: 'max_tokens', ...limits } })
  expect((await put(before)).status).toBeLessThan(300)
  replayJson(h.upstream, NANO_FIXTURE, { headerDelayMs: 1500 })
  const sent = h.upstream.requests.length
  const first = chat(t, key, { max_completion_tokens: MAX_TOKENS })
  await eventually(() => h.upstream.requests.length === sent + 1)
  expect((await put(after)).status).toBeLessThan(300)
  // The ledger cannot store the first call until released.
  const lock = await holdLock(t.store, 'LOCK TABLE calls IN EXCLUSIVE MODE')
  let second: Awaited<ReturnType<typeof chat>>
  try {
    expect((await first).status).toBe(200)
    second = await chat(t, key, { max_completion_tokens: MAX_TOKENS })
  } finally {
    await lock.release()
  }
  expect(second.status).toBe(429)
  expect(second.json().error).toMatchObject({ type: 'budget_exceeded', period })
  expect(h.upstream.requests.length).toBe(sent + 1)
  // Stored: the call counts on the edited rule's own row, its settlement no longer owed to it.
  await eventually(async () => (await t.store.get<{ n: number }>('SELECT COUNT(*)::int AS n FROM budget_settled WHERE owed'))?.n === 0)
  const third = await chat(t, key, { max_completion_tokens: MAX_TOKENS })
  expect(third.status).toBe(429)
  expect(h.upstream.requests.length).toBe(sent + 1)
}

/** One call's worst case fits, not the first call's real cost and a second worst case. */
const LIMIT = WORST * 1.5

describe('a call admitted before its rule was edited, settled but not stored yet (PostgreSQL)', () => {
  it("a scope edited: the call's cost counts against the edited rule, and the key's next call, whose worst case no longer fits, is refused", async () => {
    await nextRefused('sk-uedit-*', 'sk-uedit-aaaaaaaa-0003', { model_pattern: 'gpt-5-nano*', daily_limit_usd: LIMIT }, { model_pattern: 'gpt-5*', daily_limit_usd: LIMIT }, 'daily')
  }, 60_000)

  it("a window's length edited: the same, on the window's new row", async () => {
    await nextRefused('sk-wuedit-*', 'sk-wuedit-aaaaaaaa-0004', { window_hours: 5, window_limit_usd: LIMIT }, { window_hours: 6, window_limit_usd: LIMIT }, 'window')
  }, 60_000)
})
