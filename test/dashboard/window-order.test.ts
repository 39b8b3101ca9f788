import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { request } from '../support/http'
import { startTestServer, type TestServer } from '../support/server'
import { makeCall } from './seed'

/**
 * A report's or export's `until` before its `since` (the two swapped): the answer was 200 with no
 * rows, an empty export, and a window running backwards, so a script saw "no spend" for a month
 * that had some. It is a 400 naming `until` and both times (contract: a known parameter with a bad
 * value is a 400 naming it).
 */
let t: TestServer
beforeAll(async () => {
  t = await startTestServer({ timezone: 'UTC' })
  t.server.ledger.record(makeCall({ ts: Date.parse('2026-11-10T12:00:00Z'), cost_usd: 1 }))
  await t.server.ledger.flushed()
})
afterAll(async () => {
  await t.cleanup()
})

describe('until before since', () => {
  it('is a 400 naming until, for the report and the export', async () => {
    for (const path of ['report?kind=daily', 'report?kind=model', 'export?format=json', 'export?format=csv']) {
      for (const [since, until, words] of [
        ['2026-11-30', '2026-11-01', 'The parameter until (2026-11-01, up to 2026-11-02T00:00:00.000Z) must be after since (2026-11-30, from 2026-11-30T00:00:00.000Z).'],
        ['2026-11-10T12:00:00Z', '2026-11-10T12:00:00Z', 'The parameter until (2026-11-10T12:00:00Z, up to 2026-11-10T12:00:00.000Z) must be after since (2026-11-10T12:00:00Z, from 2026-11-10T12:00:00.000Z).'],
      ]) {
        const r = await request(`${t.url}/api/dashboard/${path}&since=${since}&until=${until}`)
        expect(r.status, `${path} ${r.text}`).toBe(400)
        expect(r.headers['content-type']).toMatch(/^application\/json/)
        expect(r.json().error).toEqual({ type: 'invalid_request', message: words, param: 'until' })
      }
    }
    // The same day as since and until is that whole day.
    const day = await request(`${t.url}/api/dashboard/report?kind=daily&since=2026-11-10&until=2026-11-10`)
    expect(day.json().rows.map((r: { key: string }) => r.key)).toEqual(['2026-11-10'])
  })
})
