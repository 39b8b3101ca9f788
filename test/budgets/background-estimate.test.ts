import Database from 'better-sqlite3'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ADMIN_CONFIG, admin } from '../admin/support'
import { eventually, postJson, request } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'
import { type Answers, MODEL, OUTPUT, USAGE, backgroundBody, backgroundResponder } from '../providers/background-support'
import { refusal, spentToday } from './support'
import { hashKey } from '../../src/main/proxy/attribution'

// A background job's creating call is recorded at once with its prompt's estimate, which the
// ledger and the budget meters count as spend, while the job holds the reservation it was
// admitted with, which already covers that prompt. A `block` rule then counted the prompt twice
// until the job's result came, and a re-price of the running job (its estimate moved, its hold
// kept) counted the re-priced estimate twice. The estimate now settles that much of the
// reservation, as any call's cost settles its own: the job holds only what it may cost beyond.

/** About 50,000 prompt tokens ($0.50 at o3-deep-research's $10 per million): a deep-research brief with its sources pasted in. */
const PROMPT = 'otter '.repeat(50_000)
const MAX_OUTPUT = 100_000
const LIMIT = 8
const KEY = 'sk-bgest-aaaaaaaaaaaa-0001'

const answers: Answers = new Map()
let upstream: MockUpstream
let t: TestServer

beforeAll(async () => {
  upstream = await startMockUpstream(backgroundResponder(answers))
  t = await startTestServer(
    { ...ADMIN_CONFIG, timezone: 'UTC', budgets: { rules: [{ api_key_pattern: 'sk-bgest-*', daily_limit_usd: LIMIT, action: 'block', reserve: 'max_tokens' }] } },
    upstream.url,
  )
})
afterAll(async () => {
  await t?.cleanup()
  await upstream?.close()
})

const start = (id: string) =>
  postJson(`${t.url}/v1/responses`, { model: 'o3-deep-research', input: PROMPT, background: true, max_output_tokens: MAX_OUTPUT, metadata: { id } }, { authorization: `Bearer ${KEY}` })

/** The job's creating call as stored. */
function job(id: string): { cost_usd: number; estimated: number } {
  t.server.ledger.flush()
  const db = new Database(t.dbFile, { readonly: true })
  try {
    return db.prepare("SELECT cost_usd, estimated FROM calls WHERE response_id = ? AND endpoint = 'responses'").get(id) as { cost_usd: number; estimated: number }
  } finally {
    db.close()
  }
}

describe("a running background job's estimate and its hold", () => {
  it('count the job once: its hold covers what it may cost beyond the estimate the ledger counts, before and after a re-price', async () => {
    expect((await start('resp_est_a')).status).toBe(200)
    await eventually(() => job('resp_est_a') !== undefined)
    const estimate = job('resp_est_a').cost_usd
    expect(estimate).toBeGreaterThan(0.4) // the prompt's estimate, counted as spend from now on
    expect(spentToday(t, KEY)).toBeCloseTo(estimate, 9)

    // An identical job does not fit: its worst case is the first job's, which the first one still holds.
    const r1 = refusal(await start('resp_est_b'))
    const worstCase = r1.worstCase
    expect(r1.spent).toBeCloseTo(estimate, 6)
    // Spent plus held is the running job's worst case, once (builds before this one: the worst case plus the estimate again).
    expect(r1.spent + r1.reserved).toBeCloseTo(worstCase, 5)

    // Re-priced while it runs, at twice the price: its estimate doubles and is counted once.
    expect((await admin(t.url, 'PUT', `/prices/openai/${MODEL}`, { body: { input_mtok: 20, output_mtok: 80 } })).status).toBe(200)
    try {
      expect((await admin(t.url, 'POST', `/prices/openai/${MODEL}/reprice?all=true`)).json().repriced).toBe(1)
      const repriced = job('resp_est_a').cost_usd
      expect(repriced).toBeCloseTo(2 * estimate, 9)
      expect(spentToday(t, KEY)).toBeCloseTo(repriced, 9)
      const r2 = refusal(await start('resp_est_c'))
      expect(r2.spent).toBeCloseTo(repriced, 6)
      // What it holds is still what it may cost beyond its first estimate; the re-price moved only the estimate.
      expect(r2.reserved).toBeCloseTo(worstCase - estimate, 5)

      // Its result in: its real cost is spent, nothing held.
      answers.set('resp_est_a', backgroundBody('resp_est_a', 'completed', USAGE, OUTPUT))
      expect((await request(`${t.url}/v1/responses/resp_est_a`, { headers: { authorization: `Bearer ${KEY}` } })).status).toBe(200)
      await eventually(() => job('resp_est_a').estimated === 0)
      const real = job('resp_est_a').cost_usd
      await eventually(() => Math.abs(spentToday(t, KEY) - real) < 1e-9)
      // (Its real cost at twice the price is past the limit: the rule is reached, by that cost alone.)
      expect(real).toBeGreaterThan(LIMIT)
      const after = await start('resp_est_d')
      expect(after.status).toBe(429)
      expect(after.json().error.spent_usd).toBeCloseTo(real, 6)
      const spent = t.server.db.prepare('SELECT sum(cost_usd) AS c FROM calls WHERE api_key_hash = ?').get(hashKey(KEY)) as { c: number }
      expect(spentToday(t, KEY)).toBeCloseTo(spent.c, 9)
    } finally {
      await admin(t.url, 'DELETE', `/prices/openai/${MODEL}`)
    }
  })
})
