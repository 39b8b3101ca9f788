import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { openDatabase } from './db'
import { Ledger } from './ledger'
import type { CallRecord } from './record'
import { SpendTracker } from './spend'

function call(ts: number, cost: number, key = 'k1'): CallRecord {
  return {
    ts, provider: 'openai', model: 'gpt-4o-mini', endpoint: 'chat.completions', api_key_hash: key, key_hint: '', tenant: '',
    agent: '', session: '', status: 200, streamed: false, input_tokens: 1, output_tokens: 1, cache_read_tokens: 0,
    cache_write_tokens: 0, cache_write_1h_tokens: 0, reasoning_tokens: 0, cost_usd: cost, priced: true, estimated: false,
    latency_ms: 1, error: null,
  }
}

describe('SpendTracker', () => {
  it('counts per key and in total, and rolls over at local midnight and month start', () => {
    const s = new SpendTracker('Europe/Berlin')
    const t0 = Date.parse('2026-11-30T22:30:00Z') // 23:30 on Nov 30 in Berlin
    s.add('a', t0, 1.5, t0)
    s.add('b', t0, 0.25, t0)
    expect(s.key('a', t0)).toEqual({ day: 1.5, month: 1.5 })
    expect(s.totals(t0)).toEqual({ day: 1.75, month: 1.75 })
    const t1 = Date.parse('2026-11-30T23:00:00Z') // midnight, Dec 1 in Berlin
    expect(s.key('a', t1)).toEqual({ day: 0, month: 0 })
    s.add('a', t1, 2, t1)
    expect(s.key('a', t1)).toEqual({ day: 2, month: 2 })
  })

  it("today's spend on DST days: 25 hours in New York, a day from 01:00 in Santiago, a call recorded late stays on its own day", () => {
    const ny = new SpendTracker('America/New_York')
    ny.add('k1', Date.parse('2026-11-01T04:30:00Z'), 1, Date.parse('2026-11-01T04:30:00Z')) // 00:30 EDT
    ny.add('k1', Date.parse('2026-11-02T04:30:00Z'), 2, Date.parse('2026-11-02T04:30:00Z')) // 23:30 EST, the same day
    expect(ny.totals(Date.parse('2026-11-02T04:59:59Z'))).toEqual({ day: 3, month: 3 })
    expect(ny.totals(Date.parse('2026-11-02T05:00:00Z'))).toEqual({ day: 0, month: 3 })

    const cl = new SpendTracker('America/Santiago')
    // At 01:30 on the 6th (the clocks went from 00:00 to 01:00), a call of 23:30 on the 5th is recorded.
    const now = Date.parse('2026-09-06T04:30:00Z')
    cl.add('k1', Date.parse('2026-09-06T03:30:00Z'), 1, now)
    cl.add('k1', Date.parse('2026-09-06T04:10:00Z'), 2, now) // 01:10 on the 6th
    expect(cl.key('k1', now)).toEqual({ day: 2, month: 3 })
  })

  it('is re-read for the latest day any counter rolled into, not a clock stepped back before it', () => {
    const s = new SpendTracker('UTC')
    const april = Date.parse('2026-04-01T00:00:00Z')
    s.add('a', april + 5000, 1, april + 5000)
    const back = april - 2000
    expect(s.readAt(back)).toBe(april)
    expect(s.periods(s.readAt(back))).toEqual({ day: april, month: april, next: april + 86_400_000 })
    expect(s.readAt(april + 9000)).toBe(april + 9000)
    // A key read later than the totals were: its day counts too.
    const later = new SpendTracker('UTC')
    later.add('b', back - 1000, 1, back - 1000)
    later.key('b', april + 5000)
    expect(later.readAt(back)).toBe(april)
  })

  it("counts a call stamped ahead of the clock in its own day and month, its cost moved there too; a day passed over is no later day's", () => {
    const s = new SpendTracker('UTC')
    const now = Date.parse('2026-03-14T23:50:00Z')
    s.add('k', Date.parse('2026-03-15T00:10:00Z'), 2, now)
    s.add('k', Date.parse('2026-03-16T00:10:00Z'), 8, now)
    s.add('k', Date.parse('2026-04-01T00:10:00Z'), 4, now)
    expect(s.totals(now)).toEqual({ day: 0, month: 10 })
    // Re-priced down (a call stamped ahead whose cost moved): its own day's spend, never below $0.
    s.adjust('k', Date.parse('2026-03-15T00:10:00Z'), -0.5, now)
    s.adjust('k', Date.parse('2026-04-01T00:10:00Z'), -5, now)
    expect(s.key('k', Date.parse('2026-03-15T00:00:00Z'))).toEqual({ day: 1.5, month: 9.5 })
    // A day passed over (no read in it): its calls are not the next day's.
    expect(s.totals(Date.parse('2026-03-17T00:00:00Z'))).toEqual({ day: 0, month: 9.5 })
    expect(s.totals(Date.parse('2026-04-01T00:00:00Z'))).toEqual({ day: 0, month: 0 })
  })

  it('seeds itself from the ledger at start-up', () => {
    const dir = mkdtempSync(join(tmpdir(), 'burnrate-spend-'))
    const db = openDatabase(join(dir, 'b.db'))
    const ledger = new Ledger(db, { flushIntervalMs: 10, maxPending: 100, timezone: 'UTC' })
    const now = Date.now()
    ledger.record(call(now, 0.1))
    ledger.record(call(now, 0.2, 'k2'))
    ledger.record(call(now - 40 * 86400_000, 5)) // an earlier month: not counted
    ledger.close()
    const s = new SpendTracker('UTC')
    s.load(db, now)
    expect(s.key('k1', now).day).toBeCloseTo(0.1, 15)
    expect(s.totals(now).day).toBeCloseTo(0.3, 15)
    db.close()
  })
})
