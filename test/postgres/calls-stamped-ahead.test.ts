import { describe, expect, it } from 'vitest'
import type { IngestCall } from '../../src/shared/api'
import { keyHash, makeCall } from '../dashboard/seed'
import { postJson, request } from '../support/http'
import { usePostgres } from '../support/pg-harness'

/**
 * Calls stamped ahead of the server's clock: a team member whose clock runs 10 minutes fast, an
 * import of an agent's log written on such a machine. The summary counted today's and this month's
 * spend up to the server's now, so they were left out of it until then (while `report` and the
 * budgets count a call in the day its stamp falls in); the sessions list and the active count took
 * only sessions whose last call was not after now, so a session that went on on such a machine
 * vanished, calls from before included; costs, timeseries, stats, expensive and the export of a
 * range ended at now too. Every view now counts them: the summary in the day and month of their
 * stamp, the ranges and sessions as calls already made (the timeseries in its newest bucket).
 */
const h = usePostgres({ upstream: false })

const MIN = 60_000
const AHEAD = 10 * MIN

/**
 * A zone in which the calls' stamps, from 45 minutes before now to now + AHEAD (and a little more
 * each side), fall on the same day: with UTC alone the test failed from 00:00 to 00:45 UTC.
 */
function sameDayZone(now: number): string {
  const day = (t: number, tz: string) => new Intl.DateTimeFormat('en-CA', { timeZone: tz, year: 'numeric', month: '2-digit', day: '2-digit' }).format(t)
  return ['UTC', 'Asia/Tokyo', 'America/New_York'].find((tz) => day(now - 50 * MIN, tz) === day(now + AHEAD + 5 * MIN, tz))!
}

type Srv = { url: string; server: { ledger: { record(c: unknown): void; flushed(): Promise<boolean> } } }

async function check(start: (tz: string) => Promise<Srv>): Promise<void> {
  const now = Date.now()
  const t = await start(sameDayZone(now))
  t.server.ledger.record(makeCall({ ts: now - 45 * MIN, session: 's-before', cost_usd: 1 }))
  t.server.ledger.record(makeCall({ ts: now + AHEAD, session: 's-before', cost_usd: 2 }))
  t.server.ledger.record(makeCall({ ts: now + AHEAD, session: 's-ahead', cost_usd: 4, source: 'import', latency_ms: 0 }))
  await t.server.ledger.flushed()
  const get = async (p: string) => {
    const r = await request(`${t.url}/api/dashboard/${p}`)
    expect(r.status, `${p}: ${r.text}`).toBe(200)
    return r.json()
  }
  const s = await get('summary')
  expect(s).toMatchObject({ today_spend_usd: 7, month_spend_usd: 7, today_requests: 3, active_sessions: 2 })
  const sessions = (await get('sessions')).sessions as { session: string; requests: number; cost_usd: number; status: string; last_seen_at: string }[]
  expect(sessions.map((x) => [x.session, x.requests, x.cost_usd, x.status]).sort()).toEqual([['s-ahead', 1, 4, 'active'], ['s-before', 2, 3, 'active']])
  expect(sessions[0].last_seen_at).toBe(new Date(now + AHEAD).toISOString())
  for (const range of ['30m', '1h', '24h', '30d']) {
    const costs = (await get(`costs?group_by=session&range=${range}`)).rows as { key: string; cost_usd: number }[]
    const want = range === '30m' ? [['s-ahead', 4], ['s-before', 2]] : [['s-ahead', 4], ['s-before', 3]]
    expect(costs.map((r) => [r.key, r.cost_usd]), range).toEqual(want)
    const spend = range === '30m' ? 6 : 7
    const points = (await get(`timeseries?range=${range}`)).points as { cost_usd: number; requests: number }[]
    expect(points.reduce((a, p) => a + p.cost_usd, 0), `timeseries ${range}`).toBe(spend)
    expect(points.at(-1)!.cost_usd, `timeseries ${range} newest bucket`).toBeGreaterThanOrEqual(6)
    expect((await get(`stats?range=${range}`)).total_requests, `stats ${range}`).toBe(range === '30m' ? 2 : 3)
    expect((await get(`expensive?range=${range}`)).requests.map((c: { cost_usd: number }) => c.cost_usd), `expensive ${range}`).toEqual(range === '30m' ? [4, 2] : [4, 2, 1])
    expect((await get(`export?range=${range}`)).calls, `export ${range}`).toHaveLength(range === '30m' ? 2 : 3)
  }
  // As `report` counts them: in the day their stamp falls in.
  const today = (await get('report?kind=daily')).totals
  expect(today).toMatchObject({ requests: 3, cost_usd: 7 })
}

describe('calls stamped ahead of the server\'s clock', () => {
  it('count in every view on PostgreSQL', async () => {
    await check((timezone) => h.server({ config: { timezone } }))
  })

  it('count in every view on SQLite', async () => {
    await check((timezone) => h.server({ url: null, config: { timezone } }))
  })
})

/**
 * A team member's calls stamped ahead: `/api/dashboard/budgets`' `overall` ("all spend, as the
 * summary counts it") summed the members' spend of today and this month up to now, so it left them
 * out while the summary counted them.
 */
const ALICE = 'team-token-alice-stamped-ahead-7f'

function ingestCall(id: number, ts: number, cost: number): IngestCall {
  return {
    id, t: new Date(ts).toISOString(), provider: 'openai', model: 'gpt-5', api_key_hash: keyHash('sk-ahead-member-0001'), tenant: '', agent: 'codex',
    session: 's-member', status: 200, streamed: false, input_tokens: 10, output_tokens: 2, cache_read_tokens: 0, cache_write_tokens: 0,
    reasoning_tokens: 0, cost_usd: cost, priced: true, estimated: false, latency_ms: 5, response_id: `resp_${id}`, source: 'proxy', billing: 'api', project: '', member: '',
  }
}

async function checkOverall(start: (tz: string) => Promise<Srv>): Promise<void> {
  const now = Date.now()
  const t = await start(sameDayZone(now))
  const res = await postJson(`${t.url}/api/ingest`, { calls: [ingestCall(1, now - MIN, 1), ingestCall(2, now + AHEAD, 2)] }, { authorization: `Bearer ${ALICE}` })
  expect(res.json()).toMatchObject({ accepted: 2, rejected: [] })
  const summary = (await request(`${t.url}/api/dashboard/summary`)).json()
  expect(summary).toMatchObject({ today_spend_usd: 3, month_spend_usd: 3 })
  const overall = (await request(`${t.url}/api/dashboard/budgets`)).json().overall as { period: string; spent_usd: number }[]
  expect(overall.map((o) => [o.period, o.spent_usd])).toEqual([['daily', 3], ['monthly', 3]])
}

describe('a team member\'s calls stamped ahead of the server\'s clock', () => {
  const team = { members: [{ name: 'alice', token: ALICE }] }

  it('count in the budgets\' overall spend as in the summary on PostgreSQL', async () => {
    await checkOverall((timezone) => h.server({ config: { timezone, team } }))
  })

  it('count in the budgets\' overall spend as in the summary on SQLite', async () => {
    await checkOverall((timezone) => h.server({ url: null, config: { timezone, team } }))
  })
})
