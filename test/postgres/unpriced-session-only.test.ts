import { describe, expect, it } from 'vitest'
import { hashKey } from '../../src/main/proxy/attribution'
import { eventually, postJson } from '../support/http'
import { usePostgres } from '../support/pg-harness'
import { modelEchoUpstream } from '../support/model-echo'
import type { TestServer } from '../support/server'
import { getJson } from '../dashboard/seed'

/**
 * A rule's session window shows the key's session of the last 24 hours nearest its limit, from the
 * budget meter, which holds only sessions that spent money: a session whose calls were all of a
 * model with no known price never showed there (`session: null`, `unpriced_requests: 0`), though
 * its spend is unknown. Such a session now shows, at $0 with its count, when no session of the key
 * spent money under the rule (one that did stays the one shown); read when the page asks, from
 * the partial index of unpriced calls, nothing on the proxy's path. On both stores, over HTTP.
 */
const h = usePostgres({ upstream: modelEchoUpstream('chatcmpl-unpriced-session') })

const UNKNOWN = 'mystery-model-9000'
const K1 = 'sk-uso-aaaaaaaaaaaa-0001'
const K2 = 'sk-uso-bbbbbbbbbbbb-0002'
const RULES = [
  { api_key_pattern: 'sk-uso-*', daily_limit_usd: 10, session_limit_usd: 3, action: 'warn' },
  // Scoped to a priced model: the unknown model's calls are not its spend, nor its sessions.
  { api_key_pattern: 'sk-uso-a*', model_pattern: 'gpt-4o-mini*', session_limit_usd: 3, action: 'warn' },
]

async function send(t: TestServer, key: string, model: string, session: string): Promise<void> {
  const r = await postJson(`${t.url}/v1/chat/completions`, { model, messages: [{ role: 'user', content: 'hi' }] }, {
    authorization: `Bearer ${key}`, 'x-burnrate-session': session,
  })
  expect(r.status, r.text).toBe(200)
}

type Win = { period: string; spent_usd: number; unpriced_requests: number; session?: string | null }
type Entry = { rule: { api_key_pattern: string }; api_key_hash: string | null; windows: Win[] }

async function check(t: TestServer): Promise<void> {
  // K1: only calls of no known price, two in one session and one in another.
  await send(t, K1, UNKNOWN, 's-only')
  await send(t, K1, UNKNOWN, 's-only')
  await send(t, K1, UNKNOWN, 's-less')
  // K2: a session that spent money, and one of only unpriced calls.
  await send(t, K2, 'gpt-4o-mini', 's-paid')
  for (let i = 0; i < 3; i++) await send(t, K2, UNKNOWN, 's-free')
  expect(await t.server.ledger.flushed()).toBe(true)

  const get = async (): Promise<{ rules: Entry[] }> => {
    const r = await getJson(`${t.url}/api/dashboard/budgets`)
    expect(r.status).toBe(200)
    return r.body
  }
  const session = (b: { rules: Entry[] }, pattern: string, key: string) => b.rules.find((e) => e.rule.api_key_pattern === pattern && e.api_key_hash === hashKey(key))?.windows.find((w) => w.period === 'session')
  let body = await get()
  // K2's priced call is in its meter (PostgreSQL's are read from the database after start).
  await eventually(async () => {
    body = await get()
    return (session(body, 'sk-uso-*', K2)?.spent_usd ?? 0) > 0
  })
  expect(session(body, 'sk-uso-*', K1)).toMatchObject({ session: 's-only', spent_usd: 0, unpriced_requests: 2 })
  expect(session(body, 'sk-uso-*', K2)).toMatchObject({ session: 's-paid', unpriced_requests: 0 })
  expect(session(body, 'sk-uso-*', K2)!.spent_usd).toBeGreaterThan(0)
  // The scoped rule counts none of K1's calls: no session is its.
  const scoped = session(body, 'sk-uso-a*', K1)
  if (scoped) expect(scoped).toMatchObject({ session: null, spent_usd: 0, unpriced_requests: 0 })
}

describe("a session of only unpriced calls in a rule's session window", () => {
  it('is shown at $0 with its count on PostgreSQL', async () => {
    await check(await h.server({ config: { timezone: 'UTC', budgets: { rules: RULES } } }))
  })

  it('is shown at $0 with its count on SQLite', async () => {
    await check(await h.server({ url: null, config: { timezone: 'UTC', budgets: { rules: RULES } } }))
  })
})
