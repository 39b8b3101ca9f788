import { describe, expect, it } from 'vitest'
import { budgetsOf } from '../../src/main/budgets'
import { hashKey } from '../../src/main/proxy/attribution'
import { ADMIN_CONFIG } from '../admin/support'
import { eventually, postJson } from '../support/http'
import { until, usePostgres } from '../support/pg-harness'
import { NANO_COST, NANO_FIXTURE, pgBudgetServer, replayJson } from './support'

/**
 * An agent that sends no session id (the bare SDKs, Gemini CLI on an API key) gets an inferred
 * session: its calls less than 30 minutes apart. Behind a load balancer, two instances on one
 * PostgreSQL each inferred their own, so one agent's work was two sessions and its
 * `session_limit_usd` held once per instance (8 calls through a cap of 3.5). An instance now goes
 * on with the session another instance's stored call is in.
 */
const h = usePostgres()
const BODY = { model: 'gpt-5-nano', messages: [{ role: 'user', content: 'hi' }] }
const UA = { 'user-agent': 'OpenAI/Python 1.109.1' }
/** What Burnrate records that client as. */
const AGENT = 'openai-sdk'

describe('an inferred session across two instances on one PostgreSQL', () => {
  it('is one session: its cap holds once, and the ledger holds one', async () => {
    const db = h.database()
    const rules = [{ api_key_pattern: 'sk-sess-*', session_limit_usd: NANO_COST * 3.5, action: 'block' }]
    const a = await pgBudgetServer(h, db, { budgets: { rules }, ...ADMIN_CONFIG })
    const b = await pgBudgetServer(h, db, { budgets: { rules }, ...ADMIN_CONFIG })
    replayJson(h.upstream, NANO_FIXTURE)
    // Both listen for the other's calls before the first: a call stored before an instance's LISTEN
    // is up (a loaded machine's start-up) reaches it by its first read of the meters, not as a call.
    for (const t of [a, b]) {
      const feed = budgetsOf(t.server.context).feed!
      await until('the feed listens', () => feed.status().listening && feed.stats.reloads > 0)
    }
    const key = 'sk-sess-aaaaaaaa-0001'
    const statuses: number[] = []
    for (let i = 0; i < 8; i++) {
      const [self, other] = i % 2 ? [b, a] : [a, b]
      const r = await postJson(`${self.url}/v1/chat/completions`, BODY, { authorization: `Bearer ${key}`, ...UA })
      statuses.push(r.status)
      if (r.status !== 200) continue
      // The other instance has heard of the call (the calls feed) before the agent's next one reaches it.
      const session = self.server.context.sessions!.current(AGENT, hashKey(key))
      expect(session).toMatch(/^auto-/)
      await self.server.ledger.flushed()
      await eventually(() => other.server.context.sessions!.current(AGENT, hashKey(key)) === session, 15_000)
    }
    expect(statuses).toEqual([200, 200, 200, 200, 429, 429, 429, 429])
    const sessions = (await a.store.all<{ session: string }>("SELECT DISTINCT session FROM calls WHERE session LIKE 'auto-%'")).map((r) => r.session)
    expect(sessions).toHaveLength(1)
  })
})
