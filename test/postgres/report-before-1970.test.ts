import { afterAll, describe, expect, it } from 'vitest'
import type { IngestCall } from '../../src/shared/api'
import { keyHash } from '../dashboard/seed'
import { postJson, request } from '../support/http'
import { usePostgres } from '../support/pg-harness'
import { startTestServer, type TestServer } from '../support/server'

/**
 * A daily report's calls read from the calls table (a window's partial days, and every call's
 * unpriced count) were grouped by quarter hour with `ts / 900000`, which SQL truncates toward
 * zero: a call stamped before 1970 (an imported log, a member's ingest) not on a quarter hour fell
 * in the next quarter hour, so one at 1969-12-31 23:50 UTC was reported on 1970-01-01. They are
 * floored now, on SQLite and PostgreSQL alike.
 */
const h = usePostgres({ upstream: false })
const ALICE = 'team-token-alice-before-1970-1c'
const team = { timezone: 'UTC', team: { members: [{ name: 'alice', token: ALICE }] } }
const servers: TestServer[] = []
afterAll(async () => {
  for (const t of servers) await t.cleanup()
})

function call(id: number, t: string, priced: boolean): IngestCall {
  return {
    id, t, provider: 'openai', model: priced ? 'gpt-5' : 'gpt-unknown-1969', api_key_hash: keyHash('sk-before-1970-0001'), tenant: '', agent: 'codex', session: 's-1969',
    status: 200, streamed: false, input_tokens: 10, output_tokens: 2, cache_read_tokens: 0, cache_write_tokens: 0, reasoning_tokens: 0,
    cost_usd: priced ? 0.25 : 0, priced, estimated: false, latency_ms: 5, response_id: `resp_${id}`, source: 'import', billing: 'api', project: '', member: '',
  }
}

async function check(t: TestServer) {
  const res = await postJson(`${t.url}/api/ingest`, { calls: [call(1, '1969-12-31T23:50:00.000Z', true), call(2, '1969-12-31T23:55:00.000Z', false), call(3, '1969-12-31T12:00:00.000Z', true)] }, { authorization: `Bearer ${ALICE}` })
  expect(res.json()).toMatchObject({ accepted: 3, rejected: [] })
  for (const window of ['since=1969-12-31T18:00:00Z&until=1970-01-01T06:00:00Z', 'since=1969-12-31T06:00:00Z', '']) {
    const r = await request(`${t.url}/api/dashboard/report?kind=daily&${window}`)
    expect(r.status, r.text).toBe(200)
    const late = window.startsWith('since=1969-12-31T18')
    expect(r.json().rows.map((x: { key: string; requests: number; unpriced_requests: number }) => [x.key, x.requests, x.unpriced_requests]), window).toEqual([['1969-12-31', late ? 2 : 3, 1]])
    expect(r.json().totals).toMatchObject({ requests: late ? 2 : 3, unpriced_requests: 1 })
  }
}

describe('a daily report of calls stamped before 1970', () => {
  it('puts them on their own day (SQLite)', async () => {
    const t = await startTestServer(team)
    servers.push(t)
    await check(t)
  })
  it('puts them on their own day (PostgreSQL)', async () => {
    await check(await h.server({ config: team }))
  })
})
