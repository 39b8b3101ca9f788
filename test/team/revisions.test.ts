import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ADMIN_CONFIG, admin } from '../admin/support'
import { eventually, postJson, request } from '../support/http'
import { freePort } from '../support/pg-harness'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'
import { ledgerRows } from '../support/ledger-rows'

/**
 * A call's cost that moves on the member after it was sent (here: a model recorded unpriced, then
 * priced and re-priced) reaches the team server: the member sends the call again with its
 * revision, and the team server replaces what it held and moves its rollups by the difference.
 */

const ALICE = 'team-token-alice-revisions-01'
const KEY = 'sk-proj-alice-revisions-1111aaaa'
const MODEL = 'acme-private-model-1'
const USAGE = { prompt_tokens: 1200, completion_tokens: 300, total_tokens: 1500 }
/** At the runtime price set below: $2 per million input, $8 per million output. */
const PRICED = (1200 * 2 + 300 * 8) / 1e6

let upstream: MockUpstream
let port: number
const servers: TestServer[] = []
let team: TestServer
let alice: TestServer

function rows(t: TestServer): any[] {
  return ledgerRows(t.dbFile)
}

const ingest = (calls: unknown[]) =>
  postJson(`${team.url}/api/ingest`, { calls }, { authorization: `Bearer ${ALICE}` })

beforeAll(async () => {
  upstream = await startMockUpstream(() => ({
    status: 200,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      id: 'chatcmpl-revisions-1', object: 'chat.completion', created: 1, model: MODEL,
      choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }], usage: USAGE,
    }),
  }))
  port = await freePort()
  team = await startTestServer({ timezone: 'UTC', server: { port }, team: { members: [{ name: 'alice', token: ALICE }] } }, upstream.url)
  servers.push(team)
  alice = await startTestServer({ timezone: 'UTC', ...ADMIN_CONFIG, team: { url: `http://127.0.0.1:${port}`, token: ALICE, max_backoff_ms: 500 } }, upstream.url)
  servers.push(alice)
})
afterAll(async () => {
  for (const s of servers) await s.cleanup()
  await upstream.close()
})

describe('a call re-priced on the member after it was sent', () => {
  it('is sent again with its revision; the team server replaces it and its totals move', async () => {
    const r = await postJson(`${alice.url}/v1/chat/completions`, { model: MODEL, messages: [{ role: 'user', content: 'hi' }] }, { authorization: `Bearer ${KEY}` })
    expect(r.status).toBe(200)
    await eventually(() => rows(team).length === 1, 30_000)
    expect(rows(team)[0]).toMatchObject({ model: MODEL, cost_usd: 0, priced: 0, revision: null, input_tokens: 1200 })

    // Priced on the member: the model's past calls are re-priced there.
    expect((await admin(alice.url, 'PUT', `/prices/openai/${MODEL}`, { body: { input_mtok: 2, output_mtok: 8 } })).status).toBe(200)
    const repriced = (await admin(alice.url, 'POST', `/prices/openai/${MODEL}/reprice`)).json()
    expect(repriced).toMatchObject({ repriced: 1, cost_usd_after: PRICED })
    const mine = rows(alice)[0]
    expect(mine).toMatchObject({ cost_usd: PRICED, priced: 1, revision: 1 })

    // The sender is woken by the re-pricing (no 30 s idle poll).
    await eventually(() => rows(team)[0].cost_usd === PRICED, 20_000)
    expect(rows(team)).toHaveLength(1)
    expect(rows(team)[0]).toMatchObject({ origin_id: mine.id, member: 'alice', cost_usd: PRICED, priced: 1, revision: 1, input_tokens: 1200, output_tokens: 300 })
    const health = (await request(`${alice.url}/api/health`)).json().team
    expect(health).toMatchObject({ backlog: 0, rejected: 0, last_error: null })
    // The team's rollups moved by the difference: its dashboard shows the new cost.
    const costs = (await request(`${team.url}/api/dashboard/costs?group_by=member&range=24h`)).json()
    expect(costs.rows.map((x: any) => [x.key, x.requests, x.cost_usd])).toEqual([['alice', 1, PRICED]])
    const summary = (await request(`${team.url}/api/dashboard/summary`)).json()
    expect(summary.today_spend_usd).toBe(PRICED)
  })

  it('takes the same revision again as a duplicate, and never goes back to an older one', async () => {
    const mine = rows(alice)[0]
    const call = {
      id: mine.id, t: new Date(mine.ts).toISOString(), provider: 'openai', model: MODEL, api_key_hash: mine.api_key_hash, tenant: '', agent: mine.agent,
      session: mine.session, status: 200, streamed: false, input_tokens: 1200, output_tokens: 300, cache_read_tokens: 0, cache_write_tokens: 0,
      reasoning_tokens: 0, cost_usd: PRICED, priced: true, estimated: false, latency_ms: 5,
    }
    expect((await ingest([{ ...call, revision: 1 }])).json()).toMatchObject({ accepted: 0, duplicates: 1, revised: 0, rejected: [] })
    // The call as first recorded (no revision), arriving late: a duplicate, the newer cost stays.
    expect((await ingest([{ ...call, cost_usd: 0, priced: false }])).json()).toMatchObject({ accepted: 0, duplicates: 1, revised: 0, rejected: [] })
    expect(rows(team)[0]).toMatchObject({ cost_usd: PRICED, priced: 1, revision: 1 })
    // A newer revision replaces it; its rollups move again, by the difference.
    expect((await ingest([{ ...call, revision: 2, cost_usd: PRICED * 2 }])).json()).toMatchObject({ accepted: 0, duplicates: 0, revised: 1 })
    expect(rows(team)[0]).toMatchObject({ cost_usd: PRICED * 2, revision: 2 })
    const summary = (await request(`${team.url}/api/dashboard/summary`)).json()
    expect(summary.today_spend_usd).toBe(PRICED * 2)
    // A "revision" of another call under the same id (another model) is refused as before, and stores nothing.
    const other = (await ingest([{ ...call, revision: 3, model: 'gpt-4o-mini' }])).json()
    expect(other.rejected).toHaveLength(1)
    expect(other.rejected[0].error.param).toBe('calls[0].id')
    expect(rows(team)[0]).toMatchObject({ model: MODEL, revision: 2 })
    // A revision of a call the team server does not hold (pruned by its retention: its cost is in
    // the rollups already) is not stored: that would count it twice.
    const before = rows(team).length
    expect((await ingest([{ ...call, id: mine.id + 1000, revision: 4 }])).json()).toMatchObject({ accepted: 0, duplicates: 1, revised: 0, rejected: [] })
    expect(rows(team)).toHaveLength(before)
    // A revision that is not a whole number >= 1 is refused for what it holds.
    const bad = (await ingest([{ ...call, revision: 0.5 }])).json()
    expect(bad.rejected[0].error).toMatchObject({ type: 'invalid_request', param: 'calls[0].revision' })
  })
})
