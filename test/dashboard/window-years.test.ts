import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { request } from '../support/http'
import { startTestServer, type TestServer } from '../support/server'
import { makeCall } from './seed'

/**
 * A report's `since`/`until` past the years a call can bear (0000 to 9999, the contract's
 * four-digit times): `until=9999-12-31` (everything from a day on, as scripts write it) was
 * echoed as "+010000-01-01T00:00:00.000Z", an extended year that ISO readers such as Python's
 * datetime.fromisoformat refuse. Such an end is answered as null (the window has no end: no call
 * is stamped past 9999), a start before the year 0000 as null (from the beginning); a window that
 * begins past 9999 or ends before 0000 holds no call that can exist and is a 400 naming it.
 */
const FIRST = Date.parse('2026-01-10T12:00:00Z')
const LAST = Date.parse('9999-12-31T23:59:59.999Z')
let t: TestServer
beforeAll(async () => {
  t = await startTestServer({ timezone: 'UTC' })
  t.server.ledger.record(makeCall({ ts: FIRST, cost_usd: 1 }))
  // The last time a call can bear (a team member may send it): in a window that ends with 9999.
  t.server.ledger.record(makeCall({ ts: LAST, cost_usd: 2 }))
  await t.server.ledger.flushed()
})
afterAll(async () => {
  await t.cleanup()
})

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/

describe('since and until at the ends of the years 0000 to 9999', () => {
  it('answers an until past 9999 as null and a since before 0000 as null, counting every call', async () => {
    for (const [q, since] of [
      ['since=2026-01-01&until=9999-12-31', '2026-01-01T00:00:00.000Z'],
      ['since=2026-01-01&until=9999-12-31T23:00:00-05:00', '2026-01-01T00:00:00.000Z'],
      ['since=0000-01-01T00:30:00%2B01:00&until=9999-12-31', null],
    ] as const) {
      const r = await request(`${t.url}/api/dashboard/report?kind=monthly&${q}`)
      expect(r.status, r.text).toBe(200)
      const j = r.json()
      expect({ since: j.since, until: j.until }, q).toEqual({ since, until: null })
      expect(j.totals.cost_usd, q).toBe(3)
      expect(j.rows.map((x: { key: string }) => x.key)).toEqual(['2026-01', '9999-12'])
    }
    // A time of those years is echoed as it is.
    const r = (await request(`${t.url}/api/dashboard/report?kind=daily&since=0000-01-01&until=9999-12-30`)).json()
    expect([r.since, r.until]).toEqual(['0000-01-01T00:00:00.000Z', '9999-12-31T00:00:00.000Z'])
    for (const v of [r.since, r.until]) expect(v).toMatch(ISO)
  })

  it('exports every call of such a window, the last time a call can bear too', async () => {
    const r = await request(`${t.url}/api/dashboard/export?format=json&until=9999-12-31`)
    expect(r.status, r.text).toBe(200)
    expect(r.json().calls.map((c: { t: string }) => c.t)).toEqual(['2026-01-10T12:00:00.000Z', '9999-12-31T23:59:59.999Z'])
  })

  it('refuses a window that begins after 9999 or ends before 0000, naming the parameter', async () => {
    for (const [q, param, message] of [
      ['report?kind=daily&since=9999-12-31T23:00:00-05:00', 'since', 'The parameter since (9999-12-31T23:00:00-05:00) must begin before the year 10000; calls bear times of the years 0000 to 9999.'],
      ['export?format=csv&until=0000-01-01T00:30:00%2B01:00', 'until', 'The parameter until (0000-01-01T00:30:00+01:00) must end after the year 0000 begins (0000-01-01T00:00:00.000Z); calls bear times of the years 0000 to 9999.'],
    ]) {
      const r = await request(`${t.url}/api/dashboard/${q}`)
      expect(r.status, r.text).toBe(400)
      expect(r.json().error).toEqual({ type: 'invalid_request', message, param })
    }
  })
})
