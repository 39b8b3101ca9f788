import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { eventually, postJson, request } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'
import { ADMIN_CONFIG, admin } from '../admin/support'
import { type Answers, MODEL, OUTPUT, REAL_COST, USAGE, backgroundBody, backgroundResponder } from '../providers/background-support'
import { callsOf, spentToday } from './support'

// OpenAI background responses (`background: true`) under a `block` rule: the POST ends when the
// job is queued, but the job's reservation stays held until its result is read through Burnrate
// (or it failed, was cancelled, or its hold ran out), so jobs started together cannot pass the
// limit by what they cost (README: Budgets → overshoot).

/** Each job states 125,000 output tokens at most: its worst case ($5.00 and its prompt) covers what it costs (REAL_COST, about $5.15)... */
const MAX_OUTPUT = 125_000
/** ...and a $20 daily limit fits three of them. */
const LIMIT = 20

const answers: Answers = new Map()
let upstream: MockUpstream
let t: TestServer

beforeAll(async () => {
  upstream = await startMockUpstream(backgroundResponder(answers))
  t = await startTestServer(
    {
      ...ADMIN_CONFIG,
      timezone: 'UTC',
      budgets: {
        rules: [
          { api_key_pattern: 'sk-bgjobs-*', daily_limit_usd: LIMIT, action: 'block', reserve: 'max_tokens' },
          { api_key_pattern: 'sk-bgone-*', daily_limit_usd: 6, action: 'block', reserve: 'max_tokens' },
          { api_key_pattern: 'sk-bgrep-*', daily_limit_usd: 6, action: 'block', reserve: 'max_tokens' },
          // The default reservation (`reserve: expected`): a job is let through while spend and reservations are under $12.
          { api_key_pattern: 'sk-bgexp-*', daily_limit_usd: 12, action: 'block' },
        ],
      },
    },
    upstream.url,
  )
})
afterAll(async () => {
  await t?.cleanup()
  await upstream?.close()
})
beforeEach(() => answers.clear())

const start = (key: string, id: string) =>
  postJson(
    `${t.url}/v1/responses`,
    { model: 'o3-deep-research', input: 'Research otters in space.', background: true, max_output_tokens: MAX_OUTPUT, metadata: { id }, tools: [{ type: 'web_search_preview' }] },
    { authorization: `Bearer ${key}` },
  )
const poll = (key: string, id: string) => request(`${t.url}/v1/responses/${id}`, { headers: { authorization: `Bearer ${key}` } })
describe('background responses hold their reservation while they run', () => {
  it('jobs started together stop at the limit: each holds its worst case until its result is in', async () => {
    const key = 'sk-bgjobs-aaaaaaaaaaaa-0001'
    const ids = Array.from({ length: 6 }, (_, i) => `resp_bg_budget_${i}`)
    const replies = await Promise.all(ids.map((id) => start(key, id)))
    const ok = ids.filter((_, i) => replies[i].status === 200)
    const refused = replies.filter((r) => r.status === 429)
    expect(ok.length + refused.length).toBe(ids.length)
    // Three worst cases fit in $20; the fourth would not, while the first three still run.
    expect(ok.length).toBe(3)
    for (const r of refused) expect(r.json().error).toMatchObject({ type: 'budget_exceeded', period: 'daily', limit_usd: LIMIT })
    await eventually(() => callsOf(t, key).length === ids.length)

    // Every job started ends: the spend stays within the limit.
    for (const id of ok) {
      answers.set(id, backgroundBody(id, 'completed', USAGE, OUTPUT))
      expect((await poll(key, id)).status).toBe(200)
    }
    await eventually(() => Math.abs(spentToday(t, key) - ok.length * REAL_COST) < 1e-6)
    expect(spentToday(t, key)).toBeLessThanOrEqual(LIMIT)
  })

  it('a job that failed or was cancelled without usage lets its hold go; a restart holds a running job again', async () => {
    const key = 'sk-bgone-aaaaaaaaaaaa-0002'
    // $6: one job's worst case fits, a second's does not while the first runs.
    expect((await start(key, 'resp_bg_one_a')).status).toBe(200)
    const second = await start(key, 'resp_bg_one_b')
    expect(second.status).toBe(429)
    expect(second.json().error.message).toMatch(/could cost up to/)

    // It failed: nothing billed, and nothing held any more.
    answers.set('resp_bg_one_a', { ...backgroundBody('resp_bg_one_a', 'failed', null), error: { code: 'server_error', message: 'The model failed.' } })
    expect((await poll(key, 'resp_bg_one_a')).status).toBe(200)
    await eventually(async () => (await start(key, 'resp_bg_one_c')).status === 200)

    // Cancelled, its answer saying nothing of its usage: the estimate stands, the hold ends.
    answers.set('resp_bg_one_c', backgroundBody('resp_bg_one_c', 'cancelled', null))
    expect((await postJson(`${t.url}/v1/responses/resp_bg_one_c/cancel`, {}, { authorization: `Bearer ${key}` })).status).toBe(200)
    await eventually(async () => (await start(key, 'resp_bg_one_d')).status === 200)

    // Restarted while resp_bg_one_d runs: it still holds its reservation.
    t = await t.restart()
    const after = await start(key, 'resp_bg_one_e')
    expect(after.status).toBe(429)
    expect(after.json().error.message).toMatch(/could cost up to/)
    // Its result read through the restarted Burnrate: the real cost is in, the hold gone.
    answers.set('resp_bg_one_d', backgroundBody('resp_bg_one_d', 'completed', USAGE, OUTPUT))
    expect((await poll(key, 'resp_bg_one_d')).status).toBe(200)
    await eventually(() => spentToday(t, key) >= REAL_COST)
    const refused = await start(key, 'resp_bg_one_f')
    expect(refused.status).toBe(429)
    expect(refused.json().error.spent_usd).toBeGreaterThanOrEqual(REAL_COST)
  })

  it('a re-price of a job still running keeps its hold: only its result (or its end, or the bound) lets it go', async () => {
    const key = 'sk-bgrep-aaaaaaaaaaaa-0003'
    expect((await start(key, 'resp_bg_rep_a')).status).toBe(200)
    expect((await start(key, 'resp_bg_rep_b')).status).toBe(429)
    await eventually(() => callsOf(t, key).length === 2)

    // Its model re-priced while it runs: its estimate moves, its hold stays.
    expect((await admin(t.url, 'PUT', `/prices/openai/${MODEL}`, { body: { input_mtok: 11, output_mtok: 40 } })).status).toBe(200)
    try {
      expect((await admin(t.url, 'POST', `/prices/openai/${MODEL}/reprice?all=true`)).json().repriced).toBeGreaterThan(0)
      const refused = await start(key, 'resp_bg_rep_c')
      expect(refused.status).toBe(429)
      expect(refused.json().error.message).toMatch(/could cost up to/)

      // Its result in: the hold ends, its real cost counts.
      answers.set('resp_bg_rep_a', backgroundBody('resp_bg_rep_a', 'completed', USAGE, OUTPUT))
      expect((await poll(key, 'resp_bg_rep_a')).status).toBe(200)
      await eventually(() => spentToday(t, key) > 5)
    } finally {
      await admin(t.url, 'DELETE', `/prices/openai/${MODEL}`) // the other tests' jobs at the bundled price
    }
  })

  it('under reserve: expected, a job reserves what the background jobs of its model cost, once one has taken its real usage', async () => {
    const key = 'sk-bgexp-aaaaaaaaaaaa-0004'
    // The first reserves as the model's ordinary calls (nothing known: 4,096 output tokens), and costs REAL_COST.
    expect((await start(key, 'resp_bg_exp_1')).status).toBe(200)
    answers.set('resp_bg_exp_1', backgroundBody('resp_bg_exp_1', 'completed', USAGE, OUTPUT))
    expect((await poll(key, 'resp_bg_exp_1')).status).toBe(200)
    await eventually(() => Math.abs(spentToday(t, key) - REAL_COST) < 1e-6)

    // Each job started next reserves what the first cost (not 4,096 tokens' worth): with one spent
    // and two held, the fourth is refused while they run. The limit is passed by one job at most.
    const next = []
    for (const id of ['resp_bg_exp_2', 'resp_bg_exp_3', 'resp_bg_exp_4']) next.push((await start(key, id)).status)
    expect(next).toEqual([200, 200, 429])
    const refused = await start(key, 'resp_bg_exp_5')
    expect(refused.json().error).toMatchObject({ type: 'budget_exceeded', limit_usd: 12 })
    expect(refused.json().error.message).toMatch(/still in flight are expected to cost/)
  })
})
