import { afterAll, describe, expect, it } from 'vitest'
import type { IngestCall } from '../../src/shared/api'
import { keyHash } from './seed'
import { runCliCaptured } from '../support/cli'
import { postJson, request } from '../support/http'
import { startTestServer, type TestServer } from '../support/server'

/**
 * A report's or export's `since`/`until` in the years 0001 to 0099. JavaScript's Date.UTC reads a
 * year 0 to 99 as 1900 to 1999, and the zone code placed days with it: `since=0050-03-01` was
 * answered as 1950-03-01, and a call stamped in March of the year 50 (a member may send one) fell
 * outside its own day's report. Such days are read as the years they name, in any zone.
 */
const ALICE = 'team-token-alice-early-years-1c'
const servers: TestServer[] = []
afterAll(async () => {
  for (const t of servers) await t.cleanup()
})

function call(id: number, t: string): IngestCall {
  return {
    id, t, provider: 'openai', model: 'gpt-5', api_key_hash: keyHash('sk-early-years-0001'), tenant: '', agent: 'codex', session: 's-early',
    status: 200, streamed: false, input_tokens: 10, output_tokens: 2, cache_read_tokens: 0, cache_write_tokens: 0, reasoning_tokens: 0,
    cost_usd: 0.25, priced: true, estimated: false, latency_ms: 5, response_id: `resp_${id}`, source: 'import', billing: 'api', project: '', member: '',
  }
}

async function serve(timezone: string): Promise<TestServer> {
  const t = await startTestServer({ timezone, team: { members: [{ name: 'alice', token: ALICE }] } })
  servers.push(t)
  const res = await postJson(`${t.url}/api/ingest`, { calls: [call(1, '0050-03-10T12:00:00.000Z'), call(2, '0099-12-31T12:00:00.000Z'), call(3, '1950-03-10T12:00:00.000Z')] }, { authorization: `Bearer ${ALICE}` })
  expect(res.json()).toMatchObject({ accepted: 3, rejected: [] })
  return t
}

const get = async (t: TestServer, path: string) => {
  const r = await request(`${t.url}/api/dashboard/${path}`)
  expect(r.status, `${path}: ${r.text}`).toBe(200)
  return r.json()
}

describe('days of the years 0001 to 0099', () => {
  // Berlin's clocks of the year 50 run on its local mean time, 53 min 28 s ahead of UTC.
  for (const [zone, window] of [
    ['UTC', ['0050-03-01T00:00:00.000Z', '0050-04-01T00:00:00.000Z']],
    ['Europe/Berlin', ['0050-02-28T23:06:32.000Z', '0050-03-31T23:06:32.000Z']],
  ] as const) {
    it(`are read as the years they name (${zone})`, async () => {
      const t = await serve(zone)
      const r = await get(t, 'report?kind=daily&since=0050-03-01&until=0050-03-31')
      expect([r.since, r.until]).toEqual(window)
      expect(r.rows.map((x: { key: string }) => x.key)).toEqual(['0050-03-10'])
      expect(r.totals.requests).toBe(1)
      const month = await get(t, 'report?kind=monthly&since=0001-01-01&until=0099-12-31')
      expect(month.rows.map((x: { key: string; requests: number }) => [x.key, x.requests])).toEqual([['0050-03', 1], ['0099-12', 1]])
      const week = await get(t, 'report?kind=weekly&since=0050-03-01T00:00:00Z&until=0050-03-31T00:00:00Z')
      // 10 March 50 was a Thursday (proleptic Gregorian): its week began on Monday the 7th (1950's, on the 6th).
      expect(week.rows.map((x: { key: string }) => x.key)).toEqual(['0050-03-07'])
      const exported = await get(t, 'export?since=0050-03-01&until=0050-03-31')
      expect(exported.calls.map((c: { t: string }) => c.t)).toEqual(['0050-03-10T12:00:00.000Z'])
      const all = await get(t, 'report?kind=daily')
      expect(all.rows.map((x: { key: string }) => x.key)).toEqual(['0050-03-10', '0099-12-31', '1950-03-10'])
    })
  }
})

describe('the whole ledger exported', () => {
  // The whole-ledger export (no since) began at 1970 (the API's span at 0, the CLI's server mode
  // sending since=1970-01-01): a call stamped before it, which the report lists, was left out.
  const STAMPS = ['0050-03-10T12:00:00.000Z', '0099-12-31T12:00:00.000Z', '1950-03-10T12:00:00.000Z']
  it('holds calls stamped before 1970, through the API, the CLI and the CLI on the file', async () => {
    const t = await serve('UTC')
    const byUntil = await get(t, 'export?until=2100-01-01')
    expect(byUntil.calls.map((c: { t: string }) => c.t)).toEqual(STAMPS)
    const fromYear0 = await get(t, 'export?since=0000-01-01T00:00:00.000Z')
    expect(fromYear0.calls.map((c: { t: string }) => c.t)).toEqual(STAMPS)
    for (const mode of [['--url', t.url], ['--local']]) {
      const r = await runCliCaptured('export', '--format', 'json', ...mode, '--config', t.configFile, '--data-dir', t.dir)
      expect(r.code, r.out).toBe(0)
      expect(JSON.parse(r.out).calls.map((c: { t: string }) => c.t), mode[0]).toEqual(STAMPS)
    }
  })
})
