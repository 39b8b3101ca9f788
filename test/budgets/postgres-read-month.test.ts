import { afterEach, describe, expect, it } from 'vitest'
import { budgetsOf } from '../../src/main/budgets'
import { hashKey } from '../../src/main/proxy/attribution'
import { startOfNextMonth } from '../../src/main/time/zone'
import { ADMIN_CONFIG, admin } from '../admin/support'
import { eventually } from '../support/http'
import { fixture } from '../support/fixtures'
import { usePostgres } from '../support/pg-harness'
import { NANO_FIXTURE, chat } from './support'

/**
 * On PostgreSQL an instance reads every instance's keys again with its meters (at start-up, a
 * rule change, a reconnection): each key's requests this month, the admin API's requests_month.
 * The read asked for the month it began in and counted the answer in the month it was in when
 * the answer came: one whose snapshot was taken after the month ended (a slow flush or database)
 * counted a key's whole last month as its new month's, until the next read.
 */
const h = usePostgres({ upstream: () => ({ status: 200, headers: { 'content-type': 'application/json' }, body: fixture(NANO_FIXTURE) }) })

const real = Date.now
afterEach(() => {
  Date.now = real
})

interface KeyRow {
  api_key_hash: string
  requests_month: number
}

/** The admin API's keys this month, with their requests. */
async function requests(url: string): Promise<[string, number][]> {
  const r = await admin(url, 'GET', '/api-keys')
  expect(r.status).toBe(200)
  return (r.json() as KeyRow[]).map((k) => [k.api_key_hash, k.requests_month])
}

describe("this month's requests per key read from PostgreSQL across the month's end", () => {
  it('are the new month\'s: the ended month\'s calls are not counted in it', async () => {
    const t = await h.server({ config: { ...ADMIN_CONFIG, timezone: 'UTC' } })
    const ledger = t.server.context.ledger
    // Just after the next month begins (UTC), the real clock running on.
    const offset = startOfNextMonth(real(), 'UTC') + 5000 - real()
    const nextMonth = () => real() + offset
    const both = 'sk-month-both-aaaaaaaaaaaa-0001'
    const ended = 'sk-month-ended-aaaaaaaaaa-0002'
    // Two calls this month, one by a key that also calls once in the next.
    expect((await chat(t, both)).status).toBe(200)
    expect((await chat(t, ended)).status).toBe(200)
    Date.now = nextMonth
    expect((await chat(t, both)).status).toBe(200)
    // Counted live in the new month: one request.
    await eventually(async () => JSON.stringify(await requests(t.url)) === JSON.stringify([[hashKey(both), 1]]))
    Date.now = real
    expect(await ledger.flushed()).toBe(true)
    // The next read begins this month, and the month ends before it reads (waiting for the ledger's writes).
    const flushed = ledger.flushed.bind(ledger)
    let armed = true
    ledger.flushed = () => {
      if (armed) {
        armed = false
        Date.now = nextMonth
      }
      return flushed()
    }
    const shared = budgetsOf(t.server.context).engine.shared
    const reseed = shared.reseed.bind(shared)
    // That read's keys (not those of a read begun before). Waited for without `eventually`: its deadline is Date.now's, which jumps.
    const reseeded = new Promise<void>((resolve) => {
      shared.reseed = (...args: Parameters<typeof reseed>) => {
        reseed(...args)
        if (!armed) resolve()
      }
    })
    // A rule change reads the meters again.
    expect((await admin(t.url, 'POST', '/budgets/rules', { body: { api_key_pattern: 'sk-other-*', daily_limit_usd: 5, action: 'warn' } })).status).toBe(201)
    await reseeded
    expect(armed).toBe(false)
    expect(await requests(t.url)).toEqual([[hashKey(both), 1]])
  }, 60_000)
})
