import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { localParts, startOfDay } from '../../src/main/time/zone'
import { type TestServer, startTestServer } from '../support/server'
import { getJson, makeCall } from './seed'

/**
 * Reports around DST changes, through a real server and SQLite file, with the process in a zone
 * far from the configured one (so anything that reads the machine's zone shows).
 */
let savedTz: string | undefined
beforeAll(() => {
  savedTz = process.env.TZ
  process.env.TZ = 'Pacific/Kiritimati'
  // Node applies TZ as it is set: the machine's zone is now +14:00.
  expect(new Date(Date.UTC(2026, 0, 1)).getTimezoneOffset()).toBe(-14 * 60)
})
afterAll(() => {
  if (savedTz === undefined) delete process.env.TZ
  else process.env.TZ = savedTz
})

let t: TestServer | null = null
afterEach(async () => {
  await t?.cleanup()
  t = null
})

async function report(query: string): Promise<Record<string, { requests: number; cost_usd: number }>> {
  const { status, body } = await getJson(`${t!.url}/api/dashboard/report?${query}`)
  expect(status, JSON.stringify(body)).toBe(200)
  return Object.fromEntries(body.rows.map((r: any) => [r.key, { requests: r.requests, cost_usd: r.cost_usd }]))
}

async function record(calls: [string, number][]): Promise<void> {
  for (const [at, cost] of calls) t!.server.ledger.record(makeCall({ ts: Date.parse(at), cost_usd: cost }))
  await t!.server.ledger.flushed()
}

describe('daily reports on days of 23 and 25 hours', () => {
  it('Santiago: the day the clocks skip midnight begins at 01:00, and 23:30 the night before stays on the 5th', async () => {
    t = await startTestServer({ timezone: 'America/Santiago' })
    await record([
      ['2026-09-05T16:00:00Z', 1], // 5th 12:00 (-04)
      ['2026-09-06T03:30:00Z', 2], // 5th 23:30 (-04)
      ['2026-09-06T04:30:00Z', 4], // 6th 01:30 (-03): 00:00-01:00 does not exist
      ['2026-09-06T15:00:00Z', 8], // 6th 12:00
      ['2026-09-07T02:59:00Z', 16], // 6th 23:59
      ['2026-09-07T03:00:00Z', 32], // 7th 00:00
    ])
    expect(await report('kind=daily&since=2026-09-05&until=2026-09-07')).toEqual({
      '2026-09-05': { requests: 2, cost_usd: 3 },
      '2026-09-06': { requests: 3, cost_usd: 28 },
      '2026-09-07': { requests: 1, cost_usd: 32 },
    })
    // A day's window is the day: until=2026-09-05 ends where the 6th begins (01:00 local).
    expect(await report('kind=daily&since=2026-09-05&until=2026-09-05')).toEqual({ '2026-09-05': { requests: 2, cost_usd: 3 } })
    // An ISO time without an offset is a wall-clock time in `timezone`, not in the machine's zone.
    expect(await report('kind=daily&since=2026-09-05T23:00&until=2026-09-06T12:00')).toEqual({
      '2026-09-05': { requests: 1, cost_usd: 2 },
      '2026-09-06': { requests: 1, cost_usd: 4 },
    })
  })

  it('New York: the 25-hour 1st of November holds both 01:30s, and October ends at its own midnight', async () => {
    t = await startTestServer({ timezone: 'America/New_York' })
    await record([
      ['2026-11-01T03:30:00Z', 1], // Oct 31 23:30 EDT
      ['2026-11-01T04:30:00Z', 2], // Nov 1 00:30 EDT
      ['2026-11-01T05:30:00Z', 4], // 01:30 EDT
      ['2026-11-01T06:30:00Z', 8], // 01:30 EST
      ['2026-11-02T04:30:00Z', 16], // Nov 1 23:30 EST
      ['2026-11-02T05:30:00Z', 32], // Nov 2 00:30 EST
    ])
    expect(await report('kind=daily&since=2026-10-31&until=2026-11-02')).toEqual({
      '2026-10-31': { requests: 1, cost_usd: 1 },
      '2026-11-01': { requests: 4, cost_usd: 30 },
      '2026-11-02': { requests: 1, cost_usd: 32 },
    })
    expect(await report('kind=monthly&since=2026-10-01&until=2026-11-30')).toEqual({
      '2026-10': { requests: 1, cost_usd: 1 },
      '2026-11': { requests: 5, cost_usd: 62 },
    })
    // 01:30 on the 1st happens twice; a naive time means the first.
    expect(await report('kind=daily&since=2026-11-01T01:30&until=2026-11-01')).toEqual({ '2026-11-01': { requests: 3, cost_usd: 28 } })
  })
})

describe("today and this month on a machine in another zone", () => {
  it("/api/dashboard/summary splits at the configured zone's midnight, not the machine's (TZ=Pacific/Kiritimati)", async () => {
    const now = Date.now()
    // A configured zone where it is now between 03:00 and 21:00, so 23:59 yesterday and 00:01 today are both past.
    const tz = ['America/New_York', 'Europe/Berlin', 'Asia/Kathmandu', 'America/Los_Angeles'].find((z) => {
      const h = localParts(now, z).hour
      return h >= 3 && h < 21
    })!
    const midnight = startOfDay(now, tz)
    t = await startTestServer({ timezone: tz })
    await record([
      [new Date(midnight - 60_000).toISOString(), 0.75],
      [new Date(midnight + 60_000).toISOString(), 0.25],
    ])
    const { body } = await getJson(`${t.url}/api/dashboard/summary`)
    expect(body.today_requests).toBe(1)
    expect(body.today_spend_usd).toBe(0.25)
    expect(body.month_spend_usd).toBe(localParts(now, tz).day === 1 ? 0.25 : 1)
  })
})
