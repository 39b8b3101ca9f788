import { calcPrice } from '@pydantic/genai-prices'
import Database from 'better-sqlite3'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { hashKey } from '../../src/main/proxy/attribution'
import { sseChunks } from '../support/fixtures'
import { type Answers, MODEL, OUTPUT, REAL_COST, USAGE, backgroundBody, backgroundResponder, backgroundStream } from './background-support'
import { eventually, postJson, request } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'
import { rows } from './ledger'

// OpenAI background responses (`background: true`): the POST is answered at once, `status:
// "queued"`, without usage; the real usage comes with the terminal answer of
// `GET /v1/responses/{id}` (polled as JSON or streamed). The call that created the response is
// recorded estimated and then takes the real usage and cost, once: its row, the rollups, today's
// spend and the budget meters move together.

const KEY = 'sk-test-background-aaaaaaaa'

describe('OpenAI background responses are metered at their real cost', () => {
  let upstream: MockUpstream
  let t: TestServer
  /** What the mock answers to GET /v1/responses/{id} (and its cancel), per id. */
  const answers: Answers = new Map()

  beforeAll(async () => {
    upstream = await startMockUpstream(backgroundResponder(answers))
    t = await startTestServer(
      {
        timezone: 'UTC',
        budgets: {
          rules: [
            { api_key_pattern: 'sk-test-*', daily_limit_usd: 1000, action: 'warn' },
            { api_key_pattern: 'sk-block-*', daily_limit_usd: 1, requests_per_minute: 3, action: 'block' },
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

  const create = (id: string, key = KEY) =>
    postJson(`${t.url}/v1/responses`, { model: 'o3-deep-research', input: 'Research otters in space.', background: true, metadata: { id }, tools: [{ type: 'web_search_preview' }] }, {
      authorization: `Bearer ${key}`,
    })
  const poll = (id: string, key = KEY) => request(`${t.url}/v1/responses/${id}`, { headers: { authorization: `Bearer ${key}` } })
  /** The last call id the dashboard's rollups include. */
  const folded = () => {
    t.server.ledger.flush()
    const db = new Database(t.dbFile, { readonly: true })
    try {
      return (db.prepare('SELECT last_call_id FROM dash_state WHERE id = 1').pluck().get() as number) ?? 0
    } finally {
      db.close()
    }
  }
  const callOf = (id: string) => rows(t).find((r) => r.response_id === id && r.endpoint === 'responses')
  const daily = async () => {
    const body = (await request(`${t.url}/api/dashboard/budgets`)).json()
    return body.rules.find((r: any) => r.api_key_hash === hashKey(KEY))?.windows[0]?.spent_usd as number | undefined
  }
  const today = async () => (await request(`${t.url}/api/dashboard/summary`)).json().today_spend_usd as number

  it('a polled background response takes its real usage and cost, once: the call, the dashboard and the budget meter', async () => {
    const id = 'resp_bg_polled_0001'
    const before = await today()
    const spentBefore = (await daily()) ?? 0
    const r = await create(id)
    expect(r.status).toBe(200)
    expect(r.json()).toMatchObject({ status: 'queued', usage: null })
    const queued = await eventually(() => callOf(id))
    expect(queued).toMatchObject({ estimated: 1, output_tokens: 0, model: MODEL, revision: null })
    const estimate = queued.cost_usd as number
    expect(estimate).toBeLessThan(0.01)
    await eventually(async () => Math.abs((await daily())! - (spentBefore + estimate)) < 1e-9)

    // Folded into the rollups already: they are moved, not folded afresh.
    await eventually(() => folded() >= queued.id)

    // Still running: nothing moves.
    answers.set(id, backgroundBody(id, 'in_progress', null))
    expect((await poll(id)).status).toBe(200)
    answers.set(id, backgroundBody(id, 'completed', USAGE, OUTPUT))
    const done = await poll(id)
    expect(done.status).toBe(200)
    expect(done.json()).toMatchObject({ status: 'completed', usage: USAGE })

    const call = await eventually(() => {
      const c = callOf(id)
      return c && c.estimated === 0 ? c : undefined
    })
    expect(call).toMatchObject({
      input_tokens: 40_000,
      cache_read_tokens: 10_000,
      output_tokens: 120_000,
      reasoning_tokens: 100_000,
      estimated: 0,
      priced: 1,
      endpoint: 'responses',
      model: MODEL,
    })
    // A revision: a team server this Burnrate reports to is sent the real usage too (test/team/revisions.test.ts).
    expect(call.revision).toBeGreaterThanOrEqual(1)
    expect(call.cost_usd).toBeCloseTo(REAL_COST, 12)
    expect(REAL_COST).toBeGreaterThan(4)
    // Its two searches kept, as for any call: re-pricing it later charges them again.
    expect(JSON.parse(call.usage_extra)).toEqual({ web_searches: 2 })

    // The polls themselves cost nothing: the call is counted once, at its real cost.
    const polls = await eventually(() => {
      const p = rows(t).filter((c) => c.response_id === id && c.endpoint !== 'responses')
      return p.length === 2 ? p : undefined
    })
    for (const p of polls!) expect(p).toMatchObject({ endpoint: 'responses.retrieve', cost_usd: 0, input_tokens: 0, output_tokens: 0, estimated: 0 })
    expect(await today()).toBeCloseTo(before + REAL_COST, 9)
    expect(await daily()).toBeCloseTo(spentBefore + REAL_COST, 9)
    const costs = (await request(`${t.url}/api/dashboard/costs?group_by=model`)).json()
    const byModel = costs.rows.find((x: any) => x.key === MODEL)
    expect(byModel.cost_usd).toBeCloseTo(REAL_COST, 9)
    // The rollups' tokens moved with the call (the estimate's prompt tokens replaced by the real counts).
    expect(byModel).toMatchObject({ input_tokens: 40_000, output_tokens: 120_000, cache_read_tokens: 10_000 })

    // Polled again (the SDK's retrieve after completion): nothing moves a second time.
    expect((await poll(id)).status).toBe(200)
    await eventually(() => rows(t).filter((c) => c.response_id === id).length === 4)
    expect(callOf(id).cost_usd).toBeCloseTo(REAL_COST, 12)
    expect(await today()).toBeCloseTo(before + REAL_COST, 9)
    expect(await daily()).toBeCloseTo(spentBefore + REAL_COST, 9)
  })
  /** The creating call of `id`, once it no longer is estimated. */
  const settled = (id: string) =>
    eventually(() => {
      const c = callOf(id)
      return c && c.estimated === 0 ? c : undefined
    })

  it('a background response streamed by GET ?stream=true takes the usage of its response.completed event', async () => {
    const id = 'resp_bg_streamed_0002'
    const spentBefore = (await daily()) ?? 0
    expect((await create(id)).status).toBe(200)
    await eventually(() => callOf(id))
    answers.set(id, { status: 200, headers: { 'content-type': 'text/event-stream; charset=utf-8' }, chunks: sseChunks(backgroundStream(id, USAGE)), delayMs: 1 })
    const r = await request(`${t.url}/v1/responses/${id}?stream=true`, { headers: { authorization: `Bearer ${KEY}` } })
    expect(r.status).toBe(200)
    expect(r.text).toContain('event: response.completed')
    expect(upstream.requests.at(-1)!.url).toBe(`/v1/responses/${id}?stream=true`)
    const call = await settled(id)
    expect(call).toMatchObject({ input_tokens: 40_000, output_tokens: 120_000, reasoning_tokens: 100_000, estimated: 0 })
    expect(call.cost_usd).toBeCloseTo(REAL_COST, 12)
    await eventually(() => rows(t).some((c) => c.response_id === id && c.endpoint === 'responses.retrieve'))
    const stream = rows(t).find((c) => c.response_id === id && c.endpoint === 'responses.retrieve')
    expect(stream).toMatchObject({ cost_usd: 0, output_tokens: 0, streamed: 1 })
    await eventually(async () => Math.abs((await daily())! - (spentBefore + REAL_COST)) < 1e-9)
  })

  it('a background response that failed costs what its final body says: nothing', async () => {
    const id = 'resp_bg_failed_0003'
    const spentBefore = (await daily()) ?? 0
    expect((await create(id)).status).toBe(200)
    const queued = await eventually(() => callOf(id))
    await eventually(async () => Math.abs((await daily())! - (spentBefore + queued.cost_usd)) < 1e-9)
    answers.set(id, { ...backgroundBody(id, 'failed', null), error: { code: 'server_error', message: 'The model failed.' } })
    expect((await poll(id)).status).toBe(200)
    const call = await settled(id)
    expect(call).toMatchObject({ input_tokens: 0, output_tokens: 0, cost_usd: 0, estimated: 0 })
    await eventually(async () => Math.abs((await daily())! - spentBefore) < 1e-9)
  })

  it('a background response cancelled with its usage takes it; one cancelled without usage stays estimated', async () => {
    const withUsage = 'resp_bg_cancelled_0004'
    expect((await create(withUsage)).status).toBe(200)
    await eventually(() => callOf(withUsage))
    const partial = { ...USAGE, output_tokens: 5_000, output_tokens_details: { reasoning_tokens: 5_000 }, total_tokens: 45_000 }
    answers.set(withUsage, backgroundBody(withUsage, 'cancelled', partial))
    const r = await postJson(`${t.url}/v1/responses/${withUsage}/cancel`, {}, { authorization: `Bearer ${KEY}` })
    expect(r.status).toBe(200)
    const call = await settled(withUsage)
    const cost = calcPrice({ input_tokens: 40_000, cache_read_tokens: 10_000, output_tokens: 5_000 }, MODEL, { providerId: 'openai' })!.total_price
    expect(call).toMatchObject({ output_tokens: 5_000, estimated: 0 })
    expect(call.cost_usd).toBeCloseTo(cost, 12)
    await eventually(() => rows(t).some((c) => c.response_id === withUsage && c.endpoint === 'responses.cancel'))
    expect(rows(t).find((c) => c.response_id === withUsage && c.endpoint === 'responses.cancel')).toMatchObject({ cost_usd: 0 })

    // Cancelled, and the answer does not say what was used: the estimate stands (never guessed down to 0).
    const unknown = 'resp_bg_cancelled_0005'
    expect((await create(unknown)).status).toBe(200)
    const queued = await eventually(() => callOf(unknown))
    answers.set(unknown, backgroundBody(unknown, 'cancelled', null))
    const before = rows(t).length
    expect((await poll(unknown)).status).toBe(200)
    await eventually(() => rows(t).length > before)
    expect(callOf(unknown)).toMatchObject({ estimated: 1, cost_usd: queued.cost_usd })
  })

  it('reading a finished response that was not created in the background costs nothing more', async () => {
    const id = 'resp_fg_0006'
    answers.set(id, { ...backgroundBody(id, 'completed', USAGE, OUTPUT), background: false })
    const before = await today()
    const row = await (async () => {
      const n = rows(t).length
      expect((await poll(id)).status).toBe(200)
      return eventually(() => rows(t)[n])
    })()
    expect(row).toMatchObject({ endpoint: 'responses.retrieve', cost_usd: 0, input_tokens: 0, response_id: id })
    expect(await today()).toBe(before)
  })
  it('a background response streamed from its POST: to its end it is billed as any call; cut, a resumed GET stream settles it', async () => {
    const streamed = (id: string, cut: boolean) =>
      request(`${t.url}/v1/responses`, {
        method: 'POST',
        headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'o3-deep-research', input: 'Research otters.', background: true, stream: true, metadata: { id, ...(cut ? { cut: 1 } : {}) } }),
      }).catch(() => null)
    // To its end: the POST's own response.completed is the usage; a later read changes nothing.
    const whole = 'resp_bg_stream_0010'
    await streamed(whole, false)
    const call = await settled(whole)
    expect(call.cost_usd).toBeCloseTo(REAL_COST, 12)
    answers.set(whole, backgroundBody(whole, 'completed', USAGE, OUTPUT))
    const n = rows(t).length
    expect((await poll(whole)).status).toBe(200)
    await eventually(() => rows(t).length > n)
    expect(rows(t).filter((c) => c.response_id === whole && c.endpoint === 'responses')).toHaveLength(1)
    expect(callOf(whole).cost_usd).toBe(call.cost_usd)

    // Cut mid-stream (the client reconnects later, as the SDKs resume a background stream): estimated, then settled by the resumed GET stream.
    const cut = 'resp_bg_stream_0011'
    await streamed(cut, true)
    const estimated = await eventually(() => callOf(cut))
    expect(estimated.estimated).toBe(1)
    answers.set(cut, { status: 200, headers: { 'content-type': 'text/event-stream; charset=utf-8' }, chunks: sseChunks(backgroundStream(cut, USAGE)), delayMs: 1 })
    expect((await request(`${t.url}/v1/responses/${cut}?stream=true&starting_after=5`, { headers: { authorization: `Bearer ${KEY}` } })).status).toBe(200)
    const resumed = await settled(cut)
    expect(resumed).toMatchObject({ input_tokens: 40_000, output_tokens: 120_000 })
    expect(resumed.cost_usd).toBeCloseTo(REAL_COST, 12)
  })

  it('a block rule refuses the next call once the real cost is over its limit, never the reads and cancels of a response already paid for', async () => {
    const key = 'sk-block-background-aaaa'
    const id = 'resp_bg_blocked_0008'
    expect((await create(id, key)).status).toBe(200) // its estimate is far under the $1 limit
    await eventually(() => callOf(id))
    answers.set(id, backgroundBody(id, 'completed', USAGE, OUTPUT))
    expect((await poll(id, key)).status).toBe(200)
    await settled(id)
    const refused = await create('resp_bg_blocked_0009', key)
    expect(refused.status).toBe(429)
    expect(refused.json().error).toMatchObject({ type: 'budget_exceeded', period: 'daily', limit_usd: 1 })
    expect(refused.json().error.spent_usd).toBeCloseTo(REAL_COST, 9)
    // Over the limit, and over its 3 requests a minute: the result is still read, and cancelling is never refused.
    for (let i = 0; i < 4; i++) expect((await poll(id, key)).status).toBe(200)
    expect((await postJson(`${t.url}/v1/responses/${id}/cancel`, {}, { authorization: `Bearer ${key}` })).status).toBe(200)
  })

  it('after a restart, the budget meter and today\'s spend read back from the ledger agree with what the settled calls moved', async () => {
    const id = 'resp_bg_restart_0007'
    expect((await create(id)).status).toBe(200)
    await eventually(() => callOf(id))
    answers.set(id, backgroundBody(id, 'completed', USAGE, OUTPUT))
    expect((await poll(id)).status).toBe(200)
    await settled(id)
    await eventually(async () => (await daily())! > REAL_COST * 3)
    const [spent, spend] = [await daily(), await today()]
    t = await t.restart()
    expect(callOf(id)).toMatchObject({ estimated: 0, input_tokens: 40_000, output_tokens: 120_000 })
    expect(await today()).toBeCloseTo(spend, 9)
    // The rule's meter of the key is read back from the ledger at the key's next request (a models list: $0).
    expect((await request(`${t.url}/v1/models`, { headers: { authorization: `Bearer ${KEY}` } })).status).toBe(200)
    await eventually(async () => (await daily()) !== undefined)
    expect(await daily()).toBeCloseTo(spent!, 9)
  })
})
