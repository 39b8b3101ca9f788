import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ADMIN_CONFIG, admin } from '../admin/support'
import { chatAnswer } from '../pricing/support'
import { eventually, postJson, request } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'
import { OUTPUT, USAGE, backgroundBody, json } from '../providers/background-support'

/**
 * `burnrate_unpriced_calls_total` and `burnrate_estimated_calls_total` count calls as they were
 * recorded, and a counter never goes down: a call that gets its price later (re-priced) or its
 * real usage (a background job's result) is counted again, once, in
 * `burnrate_unpriced_calls_priced_total` / `burnrate_estimated_calls_settled_total`, so what is
 * still unpriced or estimated is one minus the other. Before, nothing on /metrics said a call
 * counted unpriced had been priced since: the README's unpriced alert kept firing for a day
 * after the price was set and the calls re-priced.
 */

const CHAT = 'gpt-6.1-marks' // unknown to the bundled prices: recorded unpriced
const JOB = 'o9-marks-research' // unknown too: its background job is recorded unpriced and estimated
const KEY = 'sk-test-marks-aaaaaaaaaaaa'

let upstream: MockUpstream
let t: TestServer

beforeAll(async () => {
  upstream = await startMockUpstream((req) => {
    const get = /^\/v1\/responses\/([^/?]+)/.exec(req.url)
    if (get) return json({ ...backgroundBody(get[1], 'completed', USAGE, OUTPUT), model: JOB })
    if (req.url.startsWith('/v1/responses')) {
      const body = JSON.parse(req.body.toString())
      return json({ ...backgroundBody(body.metadata.id, 'queued', null), model: JOB })
    }
    return { status: 200, headers: { 'content-type': 'application/json' }, body: chatAnswer(CHAT, 1_000_000, 100_000) }
  })
  t = await startTestServer({ ...ADMIN_CONFIG, timezone: 'UTC', metrics: { enabled: true }, import: { watch: false } }, upstream.url)
})
afterAll(async () => {
  await t?.cleanup()
  await upstream?.close()
})

/** The value of `name` for `model` on /metrics (null: no such series). */
async function prom(name: string, model: string): Promise<number | null> {
  const text = (await request(`${t.url}/metrics`)).text
  const line = text.split('\n').find((l) => l.startsWith(`${name}{`) && l.includes(`model="${model}"`))
  return line ? Number(line.split(' ').at(-1)) : null
}

const stored = (sql: string, model: string) => (t.server.db.prepare(sql).get(model) as { n: number }).n

describe('the unpriced and estimated counters and a call whose marks change later', () => {
  it('a re-priced call stays in the unpriced counter and is counted once as priced since', async () => {
    for (let i = 0; i < 2; i++) {
      expect((await postJson(`${t.url}/v1/chat/completions`, { model: CHAT, messages: [{ role: 'user', content: 'hi' }] }, { authorization: `Bearer ${KEY}` })).status).toBe(200)
    }
    await eventually(() => stored('SELECT count(*) AS n FROM calls WHERE model = ?', CHAT) === 2)
    expect(await prom('burnrate_unpriced_calls_total', CHAT)).toBe(2)
    // The series is there from the first unpriced call, at 0: the two can be subtracted at once.
    expect(await prom('burnrate_unpriced_calls_priced_total', CHAT)).toBe(0)

    expect((await admin(t.url, 'PUT', `/prices/openai/${CHAT}`, { body: { input_mtok: 3, output_mtok: 12 } })).status).toBe(200)
    expect((await admin(t.url, 'POST', `/prices/openai/${CHAT}/reprice`)).json()).toMatchObject({ repriced: 2, unpriced: 0 })
    expect(stored('SELECT count(*) AS n FROM calls WHERE model = ? AND priced = 0', CHAT)).toBe(0)
    expect(await prom('burnrate_unpriced_calls_total', CHAT)).toBe(2)
    expect(await prom('burnrate_unpriced_calls_priced_total', CHAT)).toBe(2)

    // Re-priced again (now priced, at another price): no call is priced "again".
    expect((await admin(t.url, 'PUT', `/prices/openai/${CHAT}`, { body: { input_mtok: 1, output_mtok: 2 } })).status).toBe(200)
    expect((await admin(t.url, 'POST', `/prices/openai/${CHAT}/reprice?all=true`)).json()).toMatchObject({ repriced: 2 })
    expect(await prom('burnrate_unpriced_calls_priced_total', CHAT)).toBe(2)
    // A re-price makes no estimate real.
    expect(await prom('burnrate_estimated_calls_settled_total', CHAT)).toBeNull()
  })

  it('a background job recorded unpriced and estimated, re-priced while it runs, then settled: each change counted once', async () => {
    const start = (id: string) =>
      postJson(`${t.url}/v1/responses`, { model: JOB, input: 'Research otters.', background: true, metadata: { id } }, { authorization: `Bearer ${KEY}` })
    expect((await start('resp_marks_1')).status).toBe(200)
    expect((await start('resp_marks_2')).status).toBe(200)
    await eventually(() => stored('SELECT count(*) AS n FROM calls WHERE model = ? AND estimated = 1 AND priced = 0', JOB) === 2)
    expect(await prom('burnrate_unpriced_calls_total', JOB)).toBe(2)
    expect(await prom('burnrate_estimated_calls_total', JOB)).toBe(2)
    expect(await prom('burnrate_unpriced_calls_priced_total', JOB)).toBe(0)
    expect(await prom('burnrate_estimated_calls_settled_total', JOB)).toBe(0)

    // Priced: the first job re-priced while it runs (its estimate gets a price, stays an estimate).
    expect((await admin(t.url, 'PUT', `/prices/openai/${JOB}`, { body: { input_mtok: 10, output_mtok: 40 } })).status).toBe(200)
    expect((await admin(t.url, 'POST', `/prices/openai/${JOB}/reprice`)).json()).toMatchObject({ repriced: 2, unpriced: 0 })
    expect(await prom('burnrate_unpriced_calls_priced_total', JOB)).toBe(2)
    expect(await prom('burnrate_estimated_calls_settled_total', JOB)).toBe(0)

    // Their results come: both take their real usage (no longer estimated), already priced.
    for (const id of ['resp_marks_1', 'resp_marks_2']) {
      expect((await request(`${t.url}/v1/responses/${id}`, { headers: { authorization: `Bearer ${KEY}` } })).status).toBe(200)
    }
    await eventually(() => stored('SELECT count(*) AS n FROM calls WHERE model = ? AND estimated = 0 AND endpoint = \'responses\'', JOB) === 2)
    await eventually(async () => (await prom('burnrate_estimated_calls_settled_total', JOB)) === 2)
    expect(await prom('burnrate_estimated_calls_total', JOB)).toBe(2)
    expect(await prom('burnrate_unpriced_calls_priced_total', JOB)).toBe(2)
    expect(await prom('burnrate_unpriced_calls_total', JOB)).toBe(2)
  })

  it('a job recorded unpriced whose result comes once its model has a price is counted priced then, once', async () => {
    const MODEL2 = `${JOB}-2`
    upstream.setResponder((req) => {
      const get = /^\/v1\/responses\/([^/?]+)/.exec(req.url)
      if (get) return json({ ...backgroundBody(get[1], 'completed', USAGE, OUTPUT), model: MODEL2 })
      const body = JSON.parse(req.body.toString())
      return json({ ...backgroundBody(body.metadata.id, 'queued', null), model: MODEL2 })
    })
    expect((await postJson(`${t.url}/v1/responses`, { model: MODEL2, input: 'Otters.', background: true, metadata: { id: 'resp_marks_3' } }, { authorization: `Bearer ${KEY}` })).status).toBe(200)
    await eventually(() => stored('SELECT count(*) AS n FROM calls WHERE model = ? AND priced = 0', MODEL2) === 1)
    // A price set, no re-price: the job's result is priced at it when it comes.
    expect((await admin(t.url, 'PUT', `/prices/openai/${MODEL2}`, { body: { input_mtok: 10, output_mtok: 40 } })).status).toBe(200)
    expect((await request(`${t.url}/v1/responses/resp_marks_3`, { headers: { authorization: `Bearer ${KEY}` } })).status).toBe(200)
    await eventually(() => stored('SELECT count(*) AS n FROM calls WHERE model = ? AND priced = 1 AND estimated = 0 AND endpoint = \'responses\'', MODEL2) === 1)
    await eventually(async () => (await prom('burnrate_estimated_calls_settled_total', MODEL2)) === 1)
    expect(await prom('burnrate_unpriced_calls_total', MODEL2)).toBe(1)
    expect(await prom('burnrate_unpriced_calls_priced_total', MODEL2)).toBe(1)
    expect(await prom('burnrate_estimated_calls_total', MODEL2)).toBe(1)
  })
})
