import { calcPrice } from '@pydantic/genai-prices'
import { describe, expect, it } from 'vitest'
import { hashKey } from '../../src/main/proxy/attribution'
import { ADMIN_CONFIG, admin } from '../admin/support'
import { eventually } from '../support/http'
import { usePostgres } from '../support/pg-harness'
import { NANO_FIXTURE, chat, pgBudgetServer, replayJson } from './support'

/**
 * On PostgreSQL a rolling window's spend row is found by the window's length (sql.ts spendStart):
 * a rule whose `window_hours` is edited starts a new row. The calls in flight reserved on the old
 * row still count against the edited rule, as they do in process (README: a rule change never lets
 * a key past its limits by what it had in flight). Before, the new row held none of them, and the
 * edited rule admitted another call past its block limit. Likewise for a rule whose scope is edited:
 * its rule key (its spend rows) names the scope.
 */

const MAX_TOKENS = 300
/** The worst case the proxy reserves for one `chat()` call: body bytes / 3 as input, max tokens as output. */
const WORST = (() => {
  const body = JSON.stringify({ model: 'gpt-5-nano', messages: [{ role: 'user', content: 'hi' }], max_completion_tokens: MAX_TOKENS })
  return calcPrice({ input_tokens: Math.ceil(Buffer.byteLength(body) / 3), output_tokens: MAX_TOKENS }, 'gpt-5-nano', { providerId: 'openai' })!.total_price
})()

const h = usePostgres()

describe('a window rule edited while a call is in flight (PostgreSQL)', () => {
  it('a new window length still counts the reservation of the call in flight: the next call is refused', async () => {
    const t = await pgBudgetServer(h, h.database(), { ...ADMIN_CONFIG, budgets: { rules: [] } })
    const key = 'sk-wedit-aaaaaaaa-0001'
    // Room for one call's worst case, not two.
    const put = (hours: number) =>
      admin(t.url, 'POST', '/budgets/rules', {
        body: { api_key_pattern: 'sk-wedit-*', window_hours: hours, window_limit_usd: WORST * 1.5, action: 'block', reserve: 'max_tokens' },
      })
    expect((await put(5)).status).toBeLessThan(300)
    replayJson(h.upstream, NANO_FIXTURE, { headerDelayMs: 3000 })
    const sent = h.upstream.requests.length
    const first = chat(t, key, { max_completion_tokens: MAX_TOKENS })
    await eventually(() => h.upstream.requests.length === sent + 1)
    expect((await put(6)).status).toBeLessThan(300)
    const second = await chat(t, key, { max_completion_tokens: MAX_TOKENS })
    expect(second.status).toBe(429)
    expect(second.json().error).toMatchObject({ type: 'budget_exceeded', period: 'window' })
    expect(h.upstream.requests.length).toBe(sent + 1)
    expect((await first).status).toBe(200)
    // Settled: nothing is left reserved on either row.
    await eventually(async () => {
      const r = await t.store.get<{ n: number }>("SELECT COUNT(*)::int AS n FROM budget_spend WHERE api_key_hash = @k AND period = 'window' AND reserved_usd > 1e-12", { k: hashKey(key) })
      return r?.n === 0
    }, 20_000)
  }, 60_000)
})

describe("a rule's scope edited while a call is in flight (PostgreSQL)", () => {
  it('the edited rule (a new spend row: its key names its scope) still counts the reservation of the call in flight', async () => {
    const t = await pgBudgetServer(h, h.database(), { ...ADMIN_CONFIG, budgets: { rules: [] } })
    const key = 'sk-sedit-aaaaaaaa-0002'
    const put = (model: string) =>
      admin(t.url, 'POST', '/budgets/rules', {
        body: { api_key_pattern: 'sk-sedit-*', model_pattern: model, daily_limit_usd: WORST * 1.5, action: 'block', reserve: 'max_tokens' },
      })
    expect((await put('gpt-5-nano*')).status).toBeLessThan(300)
    replayJson(h.upstream, NANO_FIXTURE, { headerDelayMs: 3000 })
    const sent = h.upstream.requests.length
    const first = chat(t, key, { max_completion_tokens: MAX_TOKENS })
    await eventually(() => h.upstream.requests.length === sent + 1)
    // Widened: the call in flight is still one of the rule's calls.
    expect((await put('gpt-5*')).status).toBeLessThan(300)
    const second = await chat(t, key, { max_completion_tokens: MAX_TOKENS })
    expect(second.status).toBe(429)
    expect(second.json().error).toMatchObject({ type: 'budget_exceeded', period: 'daily' })
    expect(h.upstream.requests.length).toBe(sent + 1)
    expect((await first).status).toBe(200)
  }, 60_000)
})
