import { readFileSync } from 'node:fs'
import { gzipSync } from 'node:zlib'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { IngestCall } from '../../src/shared/api'
import { createLogger } from '../../src/main/log'
import { keyHash, getJson } from '../dashboard/seed'
import { postJson, request } from '../support/http'
import { type TestServer, startTestServer } from '../support/server'
import { ledgerRows } from '../support/ledger-rows'

const ALICE = 'team-token-alice-7f3c9a1e5b'
const BOB = 'team-token-bob-2d8e4f6a0c'
const RAW_KEY = 'sk-proj-raw-key-never-stored-4242'
/** When the member's calls were made (the same call sent again has the same time). */
// A second ago: a minute ago would be yesterday in the first minute after midnight, and "today" would miss them.
const T0 = Date.now() - 1_000

/** A call as a member's Burnrate sends it (contract call fields plus the key hint). */
function call(id: number, over: Partial<IngestCall> = {}): IngestCall {
  return {
    id,
    t: new Date(T0).toISOString(),
    provider: 'anthropic',
    model: 'claude-sonnet-4-5',
    api_key_hash: keyHash(RAW_KEY),
    key_hint: 'sk-…4242',
    tenant: '',
    agent: 'claude-code',
    session: 's-1',
    status: 200,
    streamed: true,
    input_tokens: 1200,
    output_tokens: 300,
    cache_read_tokens: 1000,
    cache_write_tokens: 0,
    reasoning_tokens: 0,
    cost_usd: 0.1 + id / 1000,
    priced: true,
    estimated: false,
    latency_ms: 850,
    response_id: `msg_${id}`,
    source: 'proxy',
    billing: 'api',
    project: '/home/dev/shop',
    member: '',
    ...over,
  }
}

const ingest = (t: TestServer, calls: unknown, token: string | null = ALICE) =>
  postJson(`${t.url}/api/ingest`, { calls }, token === null ? {} : { authorization: `Bearer ${token}` })

const rows = (t: TestServer): any[] => {
  return ledgerRows(t.dbFile)
}

let team: TestServer
const lines: string[] = []

beforeAll(async () => {
  team = await startTestServer(
    { timezone: 'UTC', team: { members: [{ name: 'alice', token: ALICE }, { name: 'bob', token_sha256: keyHash(BOB) }] } },
    undefined,
    undefined,
    { log: createLogger('debug', (l) => lines.push(l)) },
  )
})
afterAll(async () => {
  await team?.cleanup()
})

describe('POST /api/ingest', () => {
  it('refuses a missing or wrong token with 401 and records nothing', async () => {
    const none = await ingest(team, [call(1)], null)
    expect(none.status).toBe(401)
    expect(none.headers['www-authenticate']).toBe('Bearer')
    expect(none.json().error.type).toBe('unauthorized')
    const wrong = await ingest(team, [call(1)], 'team-token-mallory-0000000')
    expect(wrong.status).toBe(401)
    expect(wrong.json().error).toMatchObject({ type: 'unauthorized' })
    expect(rows(team)).toHaveLength(0)
  })

  it('stores calls under the token\'s member, priced as sent, once per (member, id)', async () => {
    const batch = [call(1), call(2, { cost_usd: 0.123456789012345 })]
    const first = await ingest(team, batch)
    expect(first.status).toBe(200)
    expect(first.json()).toEqual({ accepted: 2, duplicates: 0, revised: 0, rejected: [] })
    // A replayed batch (the sender never saw the answer) counts once.
    const again = await ingest(team, batch)
    expect(again.json()).toEqual({ accepted: 0, duplicates: 2, revised: 0, rejected: [] })
    // Bob's call 1 is another call than Alice's call 1.
    const bob = await ingest(team, [call(1, { cost_usd: 0.5 })], BOB)
    expect(bob.json()).toEqual({ accepted: 1, duplicates: 0, revised: 0, rejected: [] })
    const stored = rows(team)
    expect(stored.map((r) => [r.member, r.origin_id, r.cost_usd])).toEqual([
      ['alice', 1, 0.101],
      ['alice', 2, 0.123456789012345],
      ['bob', 1, 0.5],
    ])
    expect(stored[0]).toMatchObject({ source: 'proxy', key_hint: 'sk-…4242', project: '/home/dev/shop', response_id: 'msg_1', streamed: 1 })
  })

  it('refuses, out loud, a different call under an id the member already used (a sender whose ledger started again)', async () => {
    const r = await ingest(team, [call(1, { cost_usd: 9.99, t: new Date().toISOString() }), call(2, { cost_usd: 0.123456789012345 })])
    expect(r.status).toBe(200)
    const body = r.json()
    expect(body).toMatchObject({ accepted: 0, duplicates: 1 })
    expect(body.rejected).toHaveLength(1)
    expect(body.rejected[0]).toMatchObject({ index: 0, id: 1, error: { type: 'invalid_request', param: 'calls[0].id' } })
    expect(body.rejected[0].error.message).toMatch(/already sent a different call with id 1/)
    expect(rows(team).filter((x) => x.member === 'alice' && x.origin_id === 1).map((x) => x.cost_usd)).toEqual([0.101])
  })

  it('stores the good calls of a batch and names each bad one', async () => {
    const r = await ingest(team, [
      call(10),
      call(11, { api_key_hash: RAW_KEY }),
      call(12, { cost_usd: -1 }),
      call(13, { member: 'bob' }),
      'not a call',
      call(14, { t: 'yesterday' }),
      call(15),
      // A day that does not exist (V8 would read it as March 2) and cache tokens beyond the prompt.
      call(16, { t: '2026-02-30T08:00:00.000Z' }),
      call(17, { input_tokens: 10, cache_read_tokens: 20 }),
    ])
    expect(r.status).toBe(200)
    const body = r.json()
    expect(body.accepted).toBe(2)
    expect(body.duplicates).toBe(0)
    expect(body.rejected.map((x: any) => [x.index, x.id, x.error.param])).toEqual([
      [1, 11, 'calls[1].api_key_hash'],
      [2, 12, 'calls[2].cost_usd'],
      [3, 13, 'calls[3].member'],
      [4, null, 'calls[4]'],
      [5, 14, 'calls[5].t'],
      [7, 16, 'calls[7].t'],
      [8, 17, 'calls[8].cache_read_tokens'],
    ])
    expect(body.rejected[0].error.type).toBe('invalid_request')
    expect(rows(team).filter((x) => x.member === 'alice').map((x) => x.origin_id)).toEqual([1, 2, 10, 15])
  })

  it("refuses a call of absurd size, so one member's figures cannot wipe out the team's totals", async () => {
    // Two calls of 1e308 USD made every total of their hour and day Infinity (stored as a REAL),
    // so the summary answered null for every member's spend from then on.
    const r = await ingest(team, [call(20, { cost_usd: 1e308 }), call(21, { cost_usd: 1e308 }), call(22, { input_tokens: 9e15 }), call(23, { latency_ms: 1e300 })])
    expect(r.json().rejected.map((x: any) => x.error.param)).toEqual(['calls[0].cost_usd', 'calls[1].cost_usd', 'calls[2].input_tokens', 'calls[3].latency_ms'])
    expect(r.json().accepted).toBe(0)
    const summary = (await request(`${team.url}/api/dashboard/summary`)).json()
    expect(Number.isFinite(summary.today_spend_usd)).toBe(true)
  })

  it('answers a GET with the token as the route it is not: 404 not_found, not 415', async () => {
    const r = await request(`${team.url}/api/ingest`, { headers: { authorization: `Bearer ${ALICE}` } })
    expect(r.status).toBe(404)
    expect(r.json().error.type).toBe('not_found')
  })

  it('answers a malformed body with 400 invalid_request naming the parameter', async () => {
    const auth = { authorization: `Bearer ${ALICE}` }
    const notArray = await postJson(`${team.url}/api/ingest`, { calls: 'x' }, auth)
    expect(notArray.status).toBe(400)
    expect(notArray.json().error).toMatchObject({ type: 'invalid_request', param: 'calls' })
    const tooMany = await ingest(team, Array.from({ length: 1001 }, (_, i) => call(i + 1000)))
    expect(tooMany.status).toBe(400)
    expect(tooMany.json().error.param).toBe('calls')
    const badJson = await request(`${team.url}/api/ingest`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: '{"calls": [' })
    expect(badJson.status).toBe(400)
    expect(badJson.json().error.type).toBe('invalid_request')
    const text = await request(`${team.url}/api/ingest`, { method: 'POST', headers: { ...auth, 'content-type': 'text/plain' }, body: '{}' })
    expect(text.status).toBe(415)
    const empty = await request(`${team.url}/api/ingest`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json', 'content-length': '0' } })
    expect(empty.status).toBe(400)
    expect(empty.json().error).toMatchObject({ type: 'invalid_request', param: 'calls' })
    // Empty however it is sent: chunked with no data is the same 400 as Content-Length: 0.
    const chunked = await request(`${team.url}/api/ingest`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json', 'transfer-encoding': 'chunked' } })
    expect(chunked.status).toBe(400)
    expect(chunked.json().error).toEqual({ type: 'invalid_request', message: 'The request body is empty; send a JSON object.', param: 'calls' })
    // JSON that is no object is refused as such: it is valid JSON (express's strict mode said it was not).
    for (const body of ['null', '5', '"calls"']) {
      const notObject = await request(`${team.url}/api/ingest`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body })
      expect(notObject.status).toBe(400)
      expect(notObject.json().error).toEqual({ type: 'invalid_request', message: 'The body must be a JSON object {"calls": [call, ...]}.', param: 'calls' })
    }
  })

  it('answers a body that does not decompress with 400 invalid_request saying so, not zlib\'s words alone', async () => {
    const headers = (encoding: string) => ({ authorization: `Bearer ${ALICE}`, 'content-type': 'application/json', 'content-encoding': encoding })
    const body = JSON.stringify({ calls: [call(30)] })
    const torn = await request(`${team.url}/api/ingest`, { method: 'POST', headers: headers('gzip'), body: gzipSync(body).subarray(0, 10) })
    expect(torn.status).toBe(400)
    expect(torn.json().error).toEqual({
      type: 'invalid_request',
      message: 'The request body could not be decompressed (Content-Encoding: gzip): unexpected end of file; send it whole, or uncompressed.',
      param: 'calls',
    })
    const plain = await request(`${team.url}/api/ingest`, { method: 'POST', headers: headers('br'), body })
    expect(plain.status).toBe(400)
    expect(plain.json().error).toMatchObject({ type: 'invalid_request', param: 'calls' })
    expect(plain.json().error.message).toMatch(/^The request body could not be decompressed \(Content-Encoding: br\): /)
    // A whole one is read as any other body (an empty batch: the tests below count alice's calls).
    const whole = await request(`${team.url}/api/ingest`, { method: 'POST', headers: headers('gzip'), body: gzipSync('{"calls": []}') })
    expect(whole.json()).toEqual({ accepted: 0, duplicates: 0, revised: 0, rejected: [] })
  })

  it('counts ingested calls in the dashboard, with a member breakdown of exact spend', async () => {
    const stored = rows(team)
    const spend = (m: string) => stored.filter((r) => r.member === m).reduce((s, r) => s + r.cost_usd, 0)
    const costs = (await getJson(`${team.url}/api/dashboard/costs?group_by=member&range=24h`)).body
    expect(costs.group_by).toBe('member')
    expect(costs.rows.map((r: any) => [r.key, r.requests, r.cost_usd])).toEqual([
      ['bob', 1, spend('bob')],
      ['alice', 4, spend('alice')],
    ])
    const summary = (await getJson(`${team.url}/api/dashboard/summary`)).body
    expect(summary.today_requests).toBe(5)
    expect(summary.today_spend_usd).toBeCloseTo(spend('alice') + spend('bob'), 12)
  })

  it("counts them in the budgets panel's overall spend too, as on the summary beside it", async () => {
    const summary = (await getJson(`${team.url}/api/dashboard/summary`)).body
    expect(summary.today_spend_usd).toBeGreaterThan(0)
    const overall = (await getJson(`${team.url}/api/dashboard/budgets`)).body.overall
    expect(overall.map((o: any) => o.period)).toEqual(['daily', 'monthly'])
    expect(overall[0].spent_usd).toBeCloseTo(summary.today_spend_usd, 12)
    expect(overall[1].spent_usd).toBeCloseTo(summary.month_spend_usd, 12)
    expect(overall[0].projected_usd).toBeGreaterThanOrEqual(overall[0].spent_usd)
  })

  it('filters costs, the costliest calls and the export by member, exactly', async () => {
    // An older call: the 30-day breakdown reads it from the daily rollups.
    const old = new Date(Date.now() - 3 * 86_400_000).toISOString()
    expect((await ingest(team, [call(20, { t: old, cost_usd: 2.5, model: 'claude-opus-4-1' })], BOB)).json().accepted).toBe(1)
    const stored = rows(team)
    const spend = (m: string) => stored.filter((r) => r.member === m).reduce((s, r) => s + r.cost_usd, 0)
    const byMember = (await getJson(`${team.url}/api/dashboard/costs?group_by=member&range=30d`)).body.rows
    expect(byMember.map((r: any) => [r.key, r.requests, r.cost_usd])).toEqual([
      ['bob', 2, spend('bob')],
      ['alice', 4, spend('alice')],
    ])
    const bobModels = (await getJson(`${team.url}/api/dashboard/costs?group_by=model&range=30d&member=bob`)).body.rows
    expect(bobModels.map((r: any) => [r.key, r.requests, r.cost_usd])).toEqual([
      ['claude-opus-4-1', 1, 2.5],
      ['claude-sonnet-4-5', 1, 0.5],
    ])
    const top = (await getJson(`${team.url}/api/dashboard/expensive?range=30d&member=alice`)).body.requests
    expect(top.map((c: any) => [c.member, c.cost_usd])).toEqual(
      stored.filter((r) => r.member === 'alice').map((r) => ['alice', r.cost_usd]).sort((x, y) => y[1] - x[1]),
    )
    const exported = (await getJson(`${team.url}/api/dashboard/export?range=30d&member=bob`)).body.calls
    expect(exported.map((c: any) => [c.member, c.cost_usd])).toEqual([['bob', 2.5], ['bob', 0.5]])
    const nobody = (await getJson(`${team.url}/api/dashboard/costs?group_by=member&member=carol`)).body.rows
    expect(nobody).toEqual([])
  })

  it('keeps the raw key and the team tokens out of the database and the log', async () => {
    await team.server.ledger.flushed()
    const files = [team.dbFile, `${team.dbFile}-wal`].map((f) => {
      try {
        return readFileSync(f).toString('latin1')
      } catch {
        return ''
      }
    })
    for (const secret of [RAW_KEY, ALICE, BOB]) {
      for (const f of files) expect(f.includes(secret)).toBe(false)
      expect(lines.join('').includes(secret)).toBe(false)
    }
    // The log does say what happened.
    expect(lines.join('')).toContain('member "alice" sent 7 invalid calls')
    expect(lines.join('')).toMatch(/member "alice" sent 1 invalid calls \(first: calls\[0\]\.id: member "alice" already sent a different call/)
  })

  it('refuses a config that would not work, naming the key', async () => {
    const bad = async (team: Record<string, unknown>) => {
      const t = await startTestServer({ team }).catch((err: Error) => err)
      if (!(t instanceof Error)) await t.cleanup()
      return t instanceof Error ? t.message : 'started'
    }
    expect(await bad({ members: [{ name: 'a', token: ALICE }, { name: 'a', token: BOB }] })).toMatch(/team\.members\[1\]\.name: "a" is listed twice/)
    expect(await bad({ members: [{ name: 'a', token: 'short' }] })).toMatch(/team\.members\[0\]\.token: the token is 5 characters/)
    expect(await bad({ members: [{ name: 'a' }] })).toMatch(/team\.members\[0\]: give exactly one of token and token_sha256/)
    expect(await bad({ members: [{ name: 'a', token: ALICE }, { name: 'b', token_sha256: keyHash(ALICE) }] })).toMatch(/same token is given to two members/)
    expect(await bad({ url: 'http://127.0.0.1:9' })).toMatch(/team\.url is set but team\.token is not/)
    expect(await bad({ token: ALICE })).toMatch(/team\.token is set but team\.url is not/)
  })

  it('is not there without team.members', async () => {
    const plain = await startTestServer()
    try {
      const r = await ingest(plain, [call(1)])
      expect(r.status).toBe(404)
      expect(r.json().error.type).toBe('not_found')
    } finally {
      await plain.cleanup()
    }
  })
})

describe('POST /api/ingest, one id twice in a batch', () => {
  it('takes the second copy of a call for a duplicate, and refuses a different call under the same id', async () => {
    const t = await startTestServer({ timezone: 'UTC', team: { members: [{ name: 'alice', token: ALICE }] } })
    try {
      const other = call(1, { t: new Date(T0 - 60_000).toISOString(), model: 'claude-opus-4-1', cost_usd: 3 })
      const r = await ingest(t, [call(1), call(1), other, call(2)])
      expect(r.status).toBe(200)
      const body = r.json()
      expect(body).toMatchObject({ accepted: 2, duplicates: 1, revised: 0 })
      expect(body.rejected.map((x: any) => [x.index, x.id, x.error.type, x.error.param])).toEqual([[2, 1, 'invalid_request', 'calls[2].id']])
      expect(body.rejected[0].error.message).toMatch(/different call with the same id 1/)
      expect(rows(t).map((x) => [x.origin_id, x.model, x.cost_usd])).toEqual([
        [1, 'claude-sonnet-4-5', 0.101],
        [2, 'claude-sonnet-4-5', 0.10200000000000001],
      ])
    } finally {
      await t.cleanup()
    }
  })
})
