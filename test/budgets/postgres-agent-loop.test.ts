import { describe, expect, it } from 'vitest'
import { ADMIN_CONFIG } from '../admin/support'
import { postJson } from '../support/http'
import { usePostgres } from '../support/pg-harness'
import type { TestServer } from '../support/server'
import { NANO_COST, NANO_FIXTURE, pgBudgetServer, replayJson } from './support'

/**
 * An agent's loop under a `block` rule on PostgreSQL: each call sent as soon as the last one's
 * answer arrived. The answer's settlement, which frees its reservation in the database, is
 * written just after the answer goes out; the next call's admission must not count that
 * reservation as a call still in flight (a cold start's expected cost is more than this whole
 * limit). Before, such calls were refused far under the limit with `x-should-retry: false` and a
 * `Retry-After` until midnight: the agent stopped for the day. Every key gets exactly the calls
 * its limit holds, as on SQLite, on one instance and on two taking turns (a load balancer).
 */
const h = usePostgres()
const BODY = { model: 'gpt-5-nano', messages: [{ role: 'user', content: 'hi' }] }
const LIMIT = NANO_COST * 5.5
const CONFIG = { budgets: { rules: [{ api_key_pattern: 'sk-loop-*', daily_limit_usd: LIMIT, action: 'block' }] }, ...ADMIN_CONFIG }

/** Eight calls of each of `keys` keys, one after another, to `servers` in turn: the statuses per key. */
async function loop(servers: TestServer[], tag: string, keys: number): Promise<string[]> {
  const out: string[] = []
  for (let k = 0; k < keys; k++) {
    const key = `sk-loop-${tag}-aaaaaaaa-${k}`
    const statuses: number[] = []
    for (let i = 0; i < 8; i++) {
      const r = await postJson(`${servers[i % servers.length].url}/v1/chat/completions`, BODY, { authorization: `Bearer ${key}` })
      statuses.push(r.status)
    }
    out.push(statuses.join(','))
  }
  return out
}

describe('an agent calling in a loop under a block rule on PostgreSQL', () => {
  it('one instance: every key gets the six calls its limit holds, then refusals', async () => {
    const db = h.database()
    const a = await pgBudgetServer(h, db, CONFIG)
    replayJson(h.upstream, NANO_FIXTURE)
    expect(await loop([a], 'one', 6)).toEqual(new Array(6).fill('200,200,200,200,200,200,429,429'))
  })

  it('two instances taking turns: the same', async () => {
    const db = h.database()
    const a = await pgBudgetServer(h, db, CONFIG)
    const b = await pgBudgetServer(h, db, CONFIG)
    replayJson(h.upstream, NANO_FIXTURE)
    expect(await loop([a, b], 'two', 6)).toEqual(new Array(6).fill('200,200,200,200,200,200,429,429'))
  })
})
