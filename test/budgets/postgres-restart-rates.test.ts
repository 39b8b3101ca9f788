import { describe, expect, it } from 'vitest'
import { budgetsOf } from '../../src/main/budgets'
import { eventually } from '../support/http'
import { usePostgres } from '../support/pg-harness'
import { NANO_FIXTURE, chat, pgBudgetServer, replayJson } from './support'

// PostgreSQL mode: an instance that starts (or restarts) reads the last minute's requests and
// tokens of every instance's calls from the database; it must not hand a key a fresh minute.

const h = usePostgres()

describe('per-minute limits on an instance started after the calls (PostgreSQL)', () => {
  it('counts the requests another instance admitted in the last minute, under a rule it has not seen the key match', async () => {
    const url = h.database()
    const config = { budgets: { rules: [{ api_key_pattern: 'sk-other-*', requests_per_minute: 100, action: 'block' }, { api_key_pattern: 'sk-pr-*', requests_per_minute: 3, action: 'block' }] } }
    replayJson(h.upstream, NANO_FIXTURE)
    const a = await pgBudgetServer(h, url, config)
    const key = 'sk-pr-aaaaaaaaaaaa-0001'
    expect((await chat(a, key)).status).toBe(200)
    expect((await chat(a, key)).status).toBe(200)
    expect(await a.server.ledger.flushed()).toBe(true)
    await a.stop()

    const b = await pgBudgetServer(h, url, config)
    // The meters are read from the database once the instance is up (start-up does not wait on it).
    await eventually(() => (budgetsOf(b.server.context).feed?.stats.reloads ?? 0) > 0, 20_000)
    expect((await chat(b, key)).status).toBe(200)
    const refused = await chat(b, key)
    expect(refused.status).toBe(429)
    expect(refused.json().error).toMatchObject({ type: 'rate_limited', unit: 'requests_per_minute', limit: 3, used: 3 })
  }, 60_000)
})
