import { describe, expect, it } from 'vitest'
import { budgetsOf } from '../../src/main/budgets'
import { postJson, request } from '../support/http'
import { until, usePostgres } from '../support/pg-harness'
import type { TestServer } from '../support/server'
import { type Answers, OUTPUT, USAGE, backgroundBody, backgroundResponder } from '../providers/background-support'

// PostgreSQL (`storage.url`): a background response's reservation is held in the shared spend
// rows while the job runs (its lease renewed by the instance that holds it), so another instance
// refuses what would pass the limit; its result read through that other instance ends the hold.

const answers: Answers = new Map()
const h = usePostgres({ upstream: backgroundResponder(answers) })
const KEY = 'sk-pgbghold-aaaaaaaaaaaa'

const start = (t: TestServer, id: string) =>
  postJson(`${t.url}/v1/responses`, { model: 'o3-deep-research', input: 'Research otters.', background: true, max_output_tokens: 125_000, metadata: { id } }, {
    authorization: `Bearer ${KEY}`,
  })

/**
 * Both instances hear each other (their feeds listen and have read the meters once): a move
 * committed before an instance's first read is in what it reads, not heard, and ends no hold.
 */
async function listening(...servers: TestServer[]): Promise<void> {
  for (const t of servers) {
    const feed = budgetsOf(t.server.context).feed!
    await until('the feed listens', () => feed.status().listening && feed.stats.reloads > 0)
  }
}

describe('background responses on PostgreSQL hold their reservation', () => {
  it('across instances, until the result is read on either', async () => {
    const url = h.database()
    // $6 a day: one job's worst case ($5 and its prompt) fits, not two.
    const config = { timezone: 'UTC', budgets: { rules: [{ api_key_pattern: 'sk-pgbghold-*', daily_limit_usd: 6, action: 'block', reserve: 'max_tokens' }] } }
    const a = await h.server({ url, config })
    const b = await h.server({ url, config })
    await listening(a, b)
    const store = h.store(url)

    expect((await start(a, 'resp_pg_hold_1')).status).toBe(200)
    const refused = await start(b, 'resp_pg_hold_2')
    expect(refused.status).toBe(429)
    expect(refused.json().error.message).toMatch(/could cost up to/)
    // The hold is A's reservation in the shared rows (its lease renewed by A while it holds it).
    const held = () => store.get<{ n: number }>('SELECT count(*)::int AS n FROM budget_reservations')
    expect((await held())!.n).toBeGreaterThan(0)

    // Its result read through B (A's call stored first, for B to find): B moves the cost, A hears of the move and lets the hold go.
    expect(await a.server.ledger.flushed()).toBe(true)
    answers.set('resp_pg_hold_1', { ...backgroundBody('resp_pg_hold_1', 'failed', null), error: { code: 'server_error', message: 'failed' } })
    expect((await request(`${b.url}/v1/responses/resp_pg_hold_1`, { headers: { authorization: `Bearer ${KEY}` } })).status).toBe(200)
    await until('the hold is gone', async () => (await held())!.n === 0)
    expect((await start(b, 'resp_pg_hold_3')).status).toBe(200)
  })

  it('its real usage taken on the other instance ends it (the move says so: a re-price would not)', async () => {
    const url = h.database()
    const config = { timezone: 'UTC', budgets: { rules: [{ api_key_pattern: 'sk-pgbghold-*', daily_limit_usd: 6, action: 'block', reserve: 'max_tokens' }] } }
    const a = await h.server({ url, config })
    const b = await h.server({ url, config })
    await listening(a, b)
    const store = h.store(url)
    expect((await start(a, 'resp_pg_used_1')).status).toBe(200)
    const held = () => store.get<{ n: number }>('SELECT count(*)::int AS n FROM budget_reservations')
    expect((await held())!.n).toBeGreaterThan(0)
    expect(await a.server.ledger.flushed()).toBe(true)
    answers.set('resp_pg_used_1', backgroundBody('resp_pg_used_1', 'completed', USAGE, OUTPUT))
    expect((await request(`${b.url}/v1/responses/resp_pg_used_1`, { headers: { authorization: `Bearer ${KEY}` } })).status).toBe(200)
    await until('the hold is gone', async () => (await held())!.n === 0)
  })
})
