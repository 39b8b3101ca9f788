import { describe, expect, it } from 'vitest'
import { hashKey } from '../../src/main/proxy/attribution'
import { makeCall } from '../dashboard/seed'
import { startOfDay, startOfMonth } from '../../src/main/time/zone'
import { eventually, postJson } from '../support/http'
import { usePostgres } from '../support/pg-harness'
import { modelEchoUpstream } from '../support/model-echo'
import type { TestServer } from '../support/server'
import { getJson } from '../dashboard/seed'

/**
 * A budget rule's spend (and the forecast built on it) counts a call of a model with no known
 * price as $0, so *Budgets and forecast* read such a key as under its limit with a plain figure.
 * Each window of GET /api/dashboard/budgets now says how many such calls it holds
 * (`unpriced_requests`): the key's calls the rule counts there (its scope, its window; the whole
 * session for a session limit), and `overall` the day's and month's, as the summary's. On both stores.
 */

const h = usePostgres({ upstream: modelEchoUpstream('chatcmpl-unpriced-budget') })

const UNKNOWN = 'mystery-model-9000'
const K1 = 'sk-unp-aaaaaaaaaaaa-0001'
const K2 = 'sk-unp-bbbbbbbbbbbb-0002'
const HOUR = 3_600_000
const RULES = [
  { api_key_pattern: 'sk-unp-*', daily_limit_usd: 10, monthly_limit_usd: 100, window_hours: 2, window_limit_usd: 5, session_limit_usd: 3, action: 'warn' },
  // Scoped to a priced model: the unknown model's calls are not its spend.
  { api_key_pattern: 'sk-unp-a*', model_pattern: 'gpt-4o-mini*', daily_limit_usd: 10, action: 'warn' },
]

async function send(t: TestServer, key: string, model: string, session: string, tenant: string): Promise<void> {
  const r = await postJson(`${t.url}/v1/chat/completions`, { model, messages: [{ role: 'user', content: 'hi' }] }, {
    authorization: `Bearer ${key}`, 'x-burnrate-session': session, 'x-burnrate-tenant': tenant,
  })
  expect(r.status, r.text).toBe(200)
}

type Win = { period: string; spent_usd: number; unpriced_requests: number }
type Entry = { rule: { api_key_pattern: string }; api_key_hash: string | null; windows: Win[] }

async function check(t: TestServer): Promise<void> {
  const now = Date.now()
  for (let i = 0; i < 3; i++) await send(t, K1, UNKNOWN, 's-u', 'acme')
  await send(t, K1, 'gpt-4o-mini', 's-u', 'acme')
  await send(t, K2, UNKNOWN, 's-v', 'globex')
  await send(t, K2, 'gpt-4o-mini', 's-v', 'globex')
  // K1's unpriced call of three hours ago in the same session: out of the 2-hour window, in the session's.
  const old = now - 3 * HOUR
  t.server.ledger.record(makeCall({ ts: old, api_key_hash: hashKey(K1), key_hint: 'sk-…0001', model: UNKNOWN, session: 's-u', tenant: 'acme', cost_usd: 0, priced: false }))
  expect(await t.server.ledger.flushed()).toBe(true)

  const get = async (q = ''): Promise<{ rules: Entry[]; overall: (Win & { period: string })[] }> => {
    const r = await getJson(`${t.url}/api/dashboard/budgets${q}`)
    expect(r.status).toBe(200)
    return r.body
  }
  const entry = (b: { rules: Entry[] }, pattern: string, key: string) => b.rules.find((e) => e.rule.api_key_pattern === pattern && e.api_key_hash === hashKey(key))!
  const counts = (e: Entry) => Object.fromEntries(e.windows.map((w) => [w.period, w.unpriced_requests]))
  // Each key's priced call is in its meters (PostgreSQL's are read from the database after start).
  let body = await get()
  await eventually(async () => {
    body = await get()
    return [K1, K2].every((k) => entry(body, 'sk-unp-*', k)?.windows.find((w) => w.period === 'daily')!.spent_usd > 0)
  })

  const today = old >= startOfDay(now, 'UTC') ? 1 : 0
  const month = old >= startOfMonth(now, 'UTC') ? 1 : 0
  expect(counts(entry(body, 'sk-unp-*', K1))).toEqual({ monthly: 3 + month, daily: 3 + today, window: 3, session: 4 })
  expect(entry(body, 'sk-unp-*', K1).windows.find((w) => w.period === 'session')).toMatchObject({ session: 's-u' })
  expect(counts(entry(body, 'sk-unp-*', K2))).toEqual({ monthly: 1, daily: 1, window: 1, session: 1 })
  expect(counts(entry(body, 'sk-unp-a*', K1))).toEqual({ daily: 0 })
  expect(body.overall.map((o) => [o.period, o.unpriced_requests])).toEqual([['daily', 4 + today], ['monthly', 4 + month]])

  // An answer reads the calls older than the last hour or so once while they are unchanged: another
  // unpriced call among them (stamped 2.5 hours ago: an import, a member's late call) is counted at the next.
  const later = now - 2.5 * HOUR
  t.server.ledger.record(makeCall({ ts: later, api_key_hash: hashKey(K1), key_hint: 'sk-…0001', model: UNKNOWN, session: 's-u', tenant: 'acme', cost_usd: 0, priced: false }))
  expect(await t.server.ledger.flushed()).toBe(true)
  const day2 = today + (later >= startOfDay(now, 'UTC') ? 1 : 0)
  const month2 = month + (later >= startOfMonth(now, 'UTC') ? 1 : 0)
  expect(counts(entry(await get(), 'sk-unp-*', K1))).toEqual({ monthly: 3 + month2, daily: 3 + day2, window: 3, session: 5 })

  // A tenant's view: its keys' windows, each its own count.
  const globex = await get('?tenant=globex')
  expect(globex.rules.filter((e) => e.rule.api_key_pattern === 'sk-unp-*').map((e) => [e.api_key_hash, counts(e)])).toEqual([
    [hashKey(K2), { monthly: 1, daily: 1, window: 1, session: 1 }],
  ])
}

describe('unpriced calls in the budgets and forecast', () => {
  it('are counted per rule window on PostgreSQL', async () => {
    await check(await h.server({ config: { timezone: 'UTC', budgets: { rules: RULES } } }))
  })

  it('are counted per rule window on SQLite', async () => {
    await check(await h.server({ url: null, config: { timezone: 'UTC', budgets: { rules: RULES } } }))
  })
})
