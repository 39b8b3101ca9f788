import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest'
import { alertsOf } from '../../src/main/alerts'
import { keyHash, makeCall } from '../dashboard/seed'
import { until, usePostgres } from '../support/pg-harness'
import type { TestServer } from '../support/server'
import { type Receiver, receiver } from './support'

/**
 * Money kept for a later day (a call stamped ahead of the server's clock: a team member's running
 * fast, an agent's log imported from such a machine) counts in that day's meters when it comes
 * (test/budgets/meters-ahead-midnight.test.ts), but its thresholds were checked only at the key's
 * next call: with none that day, the 50% alert its webhook should get at midnight never came, and a
 * server started that day read the spend back as already announced. The machine's clock is set as
 * the budget tests set it (vi.setSystemTime, Date only): timers run on real time, so the server's
 * wait for midnight, set from the clock before it was moved, ends a moment later.
 */
const h = usePostgres({ upstream: false })

let hook: Receiver
let own: Receiver
beforeAll(async () => {
  hook = await receiver()
  own = await receiver()
})
afterAll(async () => {
  await hook.close()
  await own.close()
})
afterEach(() => {
  vi.useRealTimers()
  hook.got.length = 0
  own.got.length = 0
})

const KEY = keyHash('sk-held-alert-0001')
const T = (iso: string) => Date.parse(iso)
const RULE = { api_key_pattern: '*', daily_limit_usd: 10, action: 'warn' }
const config = (...hooks: Receiver[]) => configWith(RULE, ...hooks)
const configWith = (rule: Record<string, unknown>, ...hooks: Receiver[]) => ({
  timezone: 'UTC',
  alerts: { webhooks: hooks.map((r) => ({ url: `${r.url}/hook` })), retries: 0 },
  budgets: { rules: [rule] },
})

/** Polls on real time (Date is faked and stands still). */
async function waitFor(what: string, fn: () => boolean, timeoutMs = 30_000): Promise<void> {
  const end = performance.now() + timeoutMs
  while (!fn()) {
    if (performance.now() > end) throw new Error(`still waiting: ${what}`)
    await new Promise((r) => setTimeout(r, 20))
  }
}

/** The thresholds a receiver got, as [period, threshold, spent]. */
const sent = (r: Receiver) => r.got.filter((g) => g.body.type === 'budget.threshold').map((g) => [g.body.window.period, g.body.threshold_pct, g.body.spent_usd])

/** A call of `cost` stamped at `iso` (ahead of the clock: as an imported log's), recorded by `t`. */
function record(t: TestServer, iso: string, cost: number, ahead = true): Promise<boolean> {
  t.server.ledger.record(makeCall({ ts: T(iso), api_key_hash: KEY, key_hint: 'sk-…0001', cost_usd: cost, ...(ahead ? { source: 'import' as const, latency_ms: 0 } : {}) }))
  return t.server.ledger.flushed()
}

const allDone = (t: TestServer) => alertsOf(t.server.context).webhooks.deliveries().every((d) => d.status !== 'pending')

function fakeClock(iso: string): void {
  vi.useFakeTimers({ toFake: ['Date'], shouldAdvanceTime: false })
  vi.setSystemTime(T(iso))
}

describe('thresholds crossed by money kept for a later day', () => {
  it('on SQLite: announced when the day starts, with no call that day', async () => {
    fakeClock('2026-03-14T23:59:58Z')
    const t = await h.server({ url: null, config: config(hook) })
    // $6 of tomorrow's $10: 60%, nothing of today's.
    await record(t, '2026-03-15T00:10:00Z', 6)
    expect(sent(hook)).toEqual([])
    vi.setSystemTime(T('2026-03-15T00:00:01Z'))
    await waitFor('the 50% alert of the new day', () => sent(hook).length >= 1 && allDone(t))
    expect(sent(hook)).toEqual([['daily', 0.5, 6]])
  }, 60_000)

  it("on SQLite: a month's too, when the month starts", async () => {
    fakeClock('2026-03-31T23:59:58Z')
    const t = await h.server({ url: null, config: configWith({ api_key_pattern: '*', monthly_limit_usd: 10, action: 'warn' }, hook) })
    await record(t, '2026-04-03T09:00:00Z', 9)
    expect(sent(hook)).toEqual([])
    vi.setSystemTime(T('2026-04-01T00:00:01Z'))
    await waitFor('the 90% alert of the new month', () => sent(hook).length >= 3 && allDone(t))
    expect(sent(hook)).toEqual([
      ['monthly', 0.5, 9],
      ['monthly', 0.8, 9],
      ['monthly', 0.9, 9],
    ])
  }, 60_000)

  it('on SQLite: announced by a server started that day, once', async () => {
    fakeClock('2026-03-14T23:50:00Z')
    const first = await h.server({ url: null, config: config(hook) })
    await record(first, '2026-03-15T00:10:00Z', 6)
    await first.stop()
    vi.setSystemTime(T('2026-03-15T00:20:00Z'))
    let t = await first.restart()
    await waitFor('the 50% alert read back at start-up', () => sent(hook).length >= 1 && allDone(t))
    expect(sent(hook)).toEqual([['daily', 0.5, 6]])
    // Started again: announced already. The call that crosses 80% is, and 50% was sent once.
    t = await t.restart()
    try {
      await record(t, '2026-03-15T00:21:00Z', 2.5, false)
      await waitFor('the 80% alert', () => sent(hook).length >= 2 && allDone(t))
      expect(sent(hook)).toEqual([
        ['daily', 0.5, 6],
        ['daily', 0.8, 8.5],
      ])
    } finally {
      await t.stop()
    }
  }, 60_000)

  it('on PostgreSQL: sent once to a webhook two instances have, when the day starts', async () => {
    fakeClock('2026-03-14T23:59:58Z')
    const url = h.database()
    type Feed = { listening: boolean; reads: number; heard: number }
    const feed = (t: TestServer) => (t.server.context.healthSections.calls_feed as () => Feed)()
    // b has a webhook of its own too: when it gets the alert, b's claim of the shared one has been answered.
    const [a, b] = [await h.server({ url, config: config(hook) }), await h.server({ url, config: config(hook, own) })]
    for (const t of [a, b]) await until('the meters read from PostgreSQL', () => feed(t).listening && feed(t).reads >= 1)
    await record(a, '2026-03-15T00:10:00Z', 6)
    await until("b heard a's call", () => feed(b).heard >= 1)
    expect(sent(hook)).toEqual([])
    vi.setSystemTime(T('2026-03-15T00:00:01Z'))
    await waitFor('the 50% alert at both webhooks', () => sent(hook).length >= 1 && sent(own).length >= 1 && allDone(a) && allDone(b))
    expect(sent(hook)).toEqual([['daily', 0.5, 6]])
    expect(sent(own)).toEqual([['daily', 0.5, 6]])
  }, 90_000)

  it('on PostgreSQL: sent by an instance started that day, once', async () => {
    fakeClock('2026-03-14T23:50:00Z')
    const url = h.database()
    type Feed = { listening: boolean; reads: number }
    const feed = (t: TestServer) => (t.server.context.healthSections.calls_feed as () => Feed)()
    const a = await h.server({ url, config: config(hook) })
    await until('the meters read from PostgreSQL', () => feed(a).listening && feed(a).reads >= 1)
    await record(a, '2026-03-15T00:10:00Z', 6)
    await a.stop()
    vi.setSystemTime(T('2026-03-15T00:20:00Z'))
    const b = await h.server({ url, config: config(hook) })
    await waitFor('the 50% alert read back at start-up', () => sent(hook).length >= 1 && allDone(b))
    // Another started that day: the webhook b sent it to does not get it again; its own, which no instance sent it to, does.
    const c = await h.server({ url, config: config(hook, own) })
    await waitFor("the 50% alert at c's own webhook", () => sent(own).length >= 1 && allDone(c))
    expect(sent(hook)).toEqual([['daily', 0.5, 6]])
    expect(sent(own)).toEqual([['daily', 0.5, 6]])
  }, 90_000)
})
