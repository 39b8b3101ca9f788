import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { admin, ADMIN_CONFIG } from '../admin/support'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { newerPriceData } from '../support/price-data'
import { type TestServer, startTestServer } from '../support/server'
import { callRecord } from '../../src/main/desktop-logic/test-helpers'
import { silentLogger } from '../../src/main/log'

// DeepSeek bills V4 at its peak price (twice the off-peak one) in Beijing's 09:00-12:00 and
// 14:00-18:00 (01:00-04:00 and 06:00-10:00 UTC) on weekdays only, since 2026-08-17, before which V4
// had one flat price (api-docs.deepseek.com/quick_start/pricing). The price data's windows are daily
// and undated, so a call in them was priced at the peak price on a weekend and before that date too.

/** V4 Flash, per million input tokens: flat before 2026-08-17, then off-peak and peak. */
const FLAT = 0.14
const OFF_PEAK = 0.22
const PEAK = 0.44

describe("DeepSeek V4's peak hours, re-priced at each call's time", () => {
  let upstream: MockUpstream
  let t: TestServer
  beforeAll(async () => {
    upstream = await startMockUpstream()
    t = await startTestServer(ADMIN_CONFIG, upstream.url)
  })
  afterAll(async () => {
    await t.cleanup()
    await upstream.close()
  })

  it('a Saturday in Beijing is off-peak all day, and a call before 2026-08-17 takes the flat price; a weekday peak hour the peak price', async () => {
    const at = {
      // Saturday 10:00 in Beijing.
      saturday: '2026-12-05T02:00:00Z',
      // Friday 10:00 in Beijing.
      friday: '2026-12-04T02:00:00Z',
      // Thursday 10:00 in Beijing, before peak hours were billed.
      july: '2026-07-02T02:00:00Z',
    }
    // Recorded unpriced (as a model the price data did not know yet), then re-priced.
    for (const ts of Object.values(at)) {
      t.server.ledger.record(callRecord({ ts: Date.parse(ts), provider: 'deepseek', model: 'deepseek-v4-flash', endpoint: 'chat.completions', input_tokens: 1_000_000, output_tokens: 0, cost_usd: 0, priced: false }))
    }
    await t.server.ledger.flush()
    const r = await admin(t.url, 'POST', '/prices/deepseek/deepseek-v4-flash/reprice')
    expect(r.json()).toMatchObject({ repriced: 3, unpriced: 0 })
    const db = new Database(t.dbFile, { readonly: true })
    try {
      const cost = (ts: string) => db.prepare('SELECT cost_usd FROM calls WHERE ts = ?').pluck().get(Date.parse(ts))
      // Before: 0.44 for each (the Saturday's twice the bill, July's three times).
      expect({ saturday: cost(at.saturday), friday: cost(at.friday), july: cost(at.july) }).toEqual({ saturday: OFF_PEAK, friday: PEAK, july: FLAT })
    } finally {
      db.close()
    }
  })

  it("China's National Day and Mid-Autumn holidays are off-peak all day, weekdays among them too", async () => {
    const at = {
      // Thursday 2026-10-01 and Wednesday 2026-10-07, 10:00 and 15:00 in Beijing (National Day).
      nationalDay: '2026-10-01T02:00:00Z',
      lastDay: '2026-10-07T07:00:00Z',
      // Friday 2026-09-25, 11:00 in Beijing (Mid-Autumn Festival).
      midAutumn: '2026-09-25T03:00:00Z',
      // Thursday 2026-10-08, 10:00 in Beijing: a working day again.
      after: '2026-10-08T02:00:00Z',
    }
    for (const ts of Object.values(at)) {
      t.server.ledger.record(callRecord({ ts: Date.parse(ts), provider: 'deepseek', model: 'deepseek-v4-pro', endpoint: 'chat.completions', input_tokens: 1_000_000, output_tokens: 0, cost_usd: 0, priced: false }))
    }
    await t.server.ledger.flush()
    const r = await admin(t.url, 'POST', '/prices/deepseek/deepseek-v4-pro/reprice')
    expect(r.json()).toMatchObject({ repriced: 4, unpriced: 0 })
    const db = new Database(t.dbFile, { readonly: true })
    try {
      const cost = (ts: string) => db.prepare('SELECT cost_usd FROM calls WHERE ts = ?').pluck().get(Date.parse(ts))
      // V4 Pro per million input tokens: 0.66 off-peak, 1.32 peak. Before: 1.32 on each holiday.
      expect(Object.fromEntries(Object.entries(at).map(([k, ts]) => [k, cost(ts)]))).toEqual({ nationalDay: 0.66, lastDay: 0.66, midAutumn: 0.66, after: 1.32 })
    } finally {
      db.close()
    }
  })
})

// DeepSeek's pricing page names deepseek-flash, with deepseek-v4-flash as a legacy name. Which
// models have the peak hours is read from the price data (their daily windows), not from a name:
// newer data pricing deepseek-flash with the same windows bills its weekend and holiday calls off-peak.
describe('peak hours of a model the price data gives DeepSeek\'s windows, whatever its name', () => {
  /** deepseek-flash per million input tokens, off-peak and peak, as the newer data below has it. */
  const FLASH_OFF = 0.15
  const FLASH_PEAK = 0.3
  const peak = { input_mtok: FLASH_PEAK, cache_read_mtok: 0.006, output_mtok: 1.2 }
  let upstream: MockUpstream
  let t: TestServer
  const warnings: string[] = []
  beforeAll(async () => {
    upstream = await startMockUpstream()
    const dir = mkdtempSync(join(tmpdir(), 'burnrate-deepseek-hours-'))
    const newer = await newerPriceData({
      deepseek: [
        {
          id: 'deepseek-flash',
          match: { starts_with: 'deepseek-flash' },
          prices: [
            { prices: { input_mtok: FLASH_OFF, cache_read_mtok: 0.003, output_mtok: 0.6 } },
            { constraint: { type: 'time_of_date', start_time: '01:00:00Z', end_time: '04:00:00Z' }, prices: peak },
            { constraint: { type: 'time_of_date', start_time: '06:00:00Z', end_time: '10:00:00Z' }, prices: peak },
          ],
        },
      ],
    })
    writeFileSync(join(dir, 'prices.json'), JSON.stringify({ updated_at: '2026-12-01T00:00:00.000Z', fetched_at: new Date().toISOString(), providers: newer }))
    t = await startTestServer(ADMIN_CONFIG, upstream.url, dir, { log: { ...silentLogger, warn: (m) => warnings.push(m) } })
  })
  afterAll(async () => {
    await t.cleanup()
    await upstream.close()
  })

  it('deepseek-flash in the peak windows: off-peak on a Beijing Saturday and on National Day, peak on a weekday; a year whose holidays are not listed is said once a day', async () => {
    const at = {
      saturday: '2026-12-05T02:00:00Z',
      nationalDay: '2026-10-02T07:00:00Z',
      friday: '2026-12-04T02:00:00Z',
      // Two peak-window calls on one weekday of 2027 (its holidays are not listed), and one on the next.
      later: '2027-03-02T02:00:00Z',
      laterAgain: '2027-03-02T07:00:00Z',
      nextDay: '2027-03-03T02:00:00Z',
    }
    for (const ts of Object.values(at)) {
      t.server.ledger.record(callRecord({ ts: Date.parse(ts), provider: 'deepseek', model: 'deepseek-flash', endpoint: 'chat.completions', input_tokens: 1_000_000, output_tokens: 0, cost_usd: 0, priced: false }))
    }
    await t.server.ledger.flush()
    const r = await admin(t.url, 'POST', '/prices/deepseek/deepseek-flash/reprice')
    expect(r.json()).toMatchObject({ repriced: 6, unpriced: 0 })
    const db = new Database(t.dbFile, { readonly: true })
    try {
      const cost = (ts: string) => db.prepare('SELECT cost_usd FROM calls WHERE ts = ?').pluck().get(Date.parse(ts))
      // Before: the peak price on the Saturday and the holiday too, twice the bill.
      expect(Object.fromEntries(Object.entries(at).map(([k, ts]) => [k, cost(ts)]))).toEqual({
        saturday: FLASH_OFF,
        nationalDay: FLASH_OFF,
        friday: FLASH_PEAK,
        later: FLASH_PEAK,
        laterAgain: FLASH_PEAK,
        nextDay: FLASH_PEAK,
      })
    } finally {
      db.close()
    }
    const said = warnings.filter((w) => w.includes('public holidays'))
    expect(said).toHaveLength(2)
    expect(said[0]).toContain('2027-03-02 (Beijing)')
    expect(said[1]).toContain('2027-03-03 (Beijing)')
  })

  it("deepseek-chat's daily windows (V3's night discount) are not the peak hours: a weekend night call keeps the data's price", async () => {
    // Sunday 02:00 in Beijing, outside the data's 00:30-16:30 UTC window (the same UTC date's 12:00 is in it).
    const night = '2026-11-28T18:00:00Z'
    t.server.ledger.record(callRecord({ ts: Date.parse(night), provider: 'deepseek', model: 'deepseek-chat', endpoint: 'chat.completions', input_tokens: 1_000_000, output_tokens: 0, cost_usd: 0, priced: false }))
    await t.server.ledger.flush()
    expect((await admin(t.url, 'POST', '/prices/deepseek/deepseek-chat/reprice')).json()).toMatchObject({ repriced: 1, unpriced: 0 })
    const db = new Database(t.dbFile, { readonly: true })
    try {
      // The data's price outside its window (0.27 in it).
      expect(db.prepare('SELECT cost_usd FROM calls WHERE ts = ?').pluck().get(Date.parse(night))).toBe(0.135)
    } finally {
      db.close()
    }
  })
})
