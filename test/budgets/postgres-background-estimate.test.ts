import { describe, expect, it } from 'vitest'
import { budgetsOf } from '../../src/main/budgets'
import { ADMIN_CONFIG, admin } from '../admin/support'
import { postJson, request } from '../support/http'
import { until, usePostgres } from '../support/pg-harness'
import type { TestServer } from '../support/server'
import { type Answers, MODEL, OUTPUT, USAGE, backgroundBody, backgroundResponder } from '../providers/background-support'
import { refusal } from './support'

// PostgreSQL (`storage.url`, two instances): a running background job's prompt estimate is spend
// in the shared rows from its call's storing on, and its hold on them covers only what it may cost
// beyond, so the rule counts the job once, before and after a re-price through the other
// instance. Builds before this one held the whole reservation beside the estimate: the prompt
// counted twice in every admission until the job's result came (test/budgets/background-estimate.test.ts on SQLite).

const answers: Answers = new Map()
const h = usePostgres({ upstream: backgroundResponder(answers) })
const KEY = 'sk-pgbgest-aaaaaaaaaaaa'
const PROMPT = 'otter '.repeat(50_000)

const start = (t: TestServer, id: string) =>
  postJson(`${t.url}/v1/responses`, { model: 'o3-deep-research', input: PROMPT, background: true, max_output_tokens: 100_000, metadata: { id } }, {
    authorization: `Bearer ${KEY}`,
  })

describe('a running background job on PostgreSQL', () => {
  it('is counted once across instances: its estimate as spend, the rest of its worst case held', async () => {
    const url = h.database()
    const config = { ...ADMIN_CONFIG, timezone: 'UTC', budgets: { rules: [{ api_key_pattern: 'sk-pgbgest-*', daily_limit_usd: 8, action: 'block', reserve: 'max_tokens' }] } }
    const a = await h.server({ url, config })
    const b = await h.server({ url, config })
    for (const t of [a, b]) {
      const feed = budgetsOf(t.server.context).feed!
      await until('the feed listens', () => feed.status().listening && feed.stats.reloads > 0)
    }
    const store = h.store(url)
    const cost = async () => (await store.get<{ c: number }>("SELECT cost_usd AS c FROM calls WHERE response_id = 'resp_pgest_a' AND endpoint = 'responses'"))?.c
    const held = async () => (await store.get<{ n: number }>('SELECT coalesce(sum(amount_usd), 0)::float8 AS n FROM budget_reservations'))!.n

    expect((await start(a, 'resp_pgest_a')).status).toBe(200)
    expect(await a.server.ledger.flushed()).toBe(true)
    await until('the job is stored', async () => (await cost()) !== undefined)
    const estimate = (await cost())!
    expect(estimate).toBeGreaterThan(0.4)

    // Spent plus held: the job's worst case once (builds before this one: plus its estimate again,
    // for as long as the job ran). The smaller hold replaces the reservation just after the call is stored.
    let r1 = refusal(await start(b, 'resp_pgest_b'))
    await until('the job is counted once', async () => {
      r1 = refusal(await start(b, 'resp_pgest_b'))
      return Math.abs(r1.spent + r1.reserved - r1.worstCase) < 1e-5
    }, 15_000)
    expect(r1.spent).toBeCloseTo(estimate, 6)
    expect(await held()).toBeCloseTo(r1.worstCase - estimate, 5)

    // Re-priced through B at twice the price while it runs: the estimate doubles, counted once; the hold stays.
    expect((await admin(b.url, 'PUT', `/prices/openai/${MODEL}`, { body: { input_mtok: 20, output_mtok: 80 } })).status).toBe(200)
    expect((await admin(b.url, 'POST', `/prices/openai/${MODEL}/reprice?all=true`)).json().repriced).toBe(1)
    expect(await cost()).toBeCloseTo(2 * estimate, 9)
    const r2 = refusal(await start(a, 'resp_pgest_c'))
    expect(r2.spent).toBeCloseTo(2 * estimate, 6)
    expect(r2.reserved).toBeCloseTo(r1.worstCase - estimate, 5)

    // Its result read through B: its real cost is the spend, nothing held.
    answers.set('resp_pgest_a', backgroundBody('resp_pgest_a', 'completed', USAGE, OUTPUT))
    expect((await request(`${b.url}/v1/responses/resp_pgest_a`, { headers: { authorization: `Bearer ${KEY}` } })).status).toBe(200)
    await until('the hold is gone', async () => (await held()) === 0)
    const real = (await cost())!
    const rows = await store.all<{ period: string; spent_usd: number; reserved_usd: number }>('SELECT period, spent_usd, reserved_usd FROM budget_spend')
    expect(rows.length).toBeGreaterThan(0)
    for (const r of rows) {
      expect(r.spent_usd).toBeCloseTo(real, 9)
      expect(r.reserved_usd).toBeCloseTo(0, 9)
    }
  })
})
