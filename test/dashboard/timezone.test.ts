import { afterEach, describe, expect, it } from 'vitest'
import { localParts, startOfDay } from '../../src/main/time/zone'
import { type TestServer, startTestServer } from '../support/server'
import { getJson, makeCall } from './seed'

/** A zone whose local time is now between 03:00 and 21:00, so 00:01 today and 23:59 yesterday are both past. */
function zoneWithDaytime(now: number): string {
  const zones = ['UTC', 'Asia/Kolkata', 'America/New_York', 'Asia/Tokyo', 'Europe/Berlin', 'America/Los_Angeles', 'Pacific/Auckland', 'Asia/Kathmandu']
  return zones.find((z) => {
    const h = localParts(now, z).hour
    return h >= 3 && h < 21
  })!
}

let t: TestServer | null = null
afterEach(async () => {
  await t?.cleanup()
  t = null
})

describe('today and this month begin in the configured zone', () => {
  it('a call at 23:59 and one at 00:01 local time land on different days', async () => {
    const now = Date.now()
    const tz = zoneWithDaytime(now)
    const midnight = startOfDay(now, tz)
    t = await startTestServer({ timezone: tz })
    t.server.ledger.record(makeCall({ ts: midnight - 60_000, cost_usd: 0.75 })) // 23:59 yesterday
    t.server.ledger.record(makeCall({ ts: midnight + 60_000, cost_usd: 0.25 })) // 00:01 today
    const { body } = await getJson(`${t.url}/api/dashboard/summary`)
    expect(body.today_requests).toBe(1)
    expect(body.today_spend_usd).toBe(0.25)
    // Yesterday's call is in this month unless today is the 1st.
    expect(body.month_spend_usd).toBe(localParts(now, tz).day === 1 ? 0.25 : 1)
  })

  it('the same calls split differently under another zone', async () => {
    const now = Date.now()
    const tz = zoneWithDaytime(now)
    const midnight = startOfDay(now, tz)
    // A zone whose midnight today is not the first one's: the first call is "today" there or not, by zone.
    t = await startTestServer({ timezone: tz })
    const calls = [-3, -2, -1, 1, 2, 3].map((h) => makeCall({ ts: midnight + h * 3_600_000 - 1, cost_usd: 1 }))
    for (const c of calls) if (c.ts < now) t.server.ledger.record(c)
    const inTz = (await getJson(`${t.url}/api/dashboard/summary`)).body
    expect(inTz.today_requests).toBe(calls.filter((c) => c.ts >= midnight && c.ts < now).length)

    await t.stop()
    const other = tz === 'Asia/Tokyo' ? 'America/New_York' : 'Asia/Tokyo'
    const t2 = await startTestServer({ timezone: other }, undefined, t.dir)
    try {
      const m2 = startOfDay(now, other)
      const want = calls.filter((c) => c.ts >= m2 && c.ts < now).length
      expect((await getJson(`${t2.url}/api/dashboard/summary`)).body.today_requests).toBe(want)
    } finally {
      await t2.stop()
    }
  })
})
