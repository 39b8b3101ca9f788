import { afterEach, describe, expect, it, vi } from 'vitest'
import { hashKey } from '../../src/main/proxy/attribution'
import { postJson } from '../support/http'
import { usePostgres } from '../support/pg-harness'
import { modelEchoUpstream } from '../support/model-echo'
import type { TestServer } from '../support/server'
import { getJson, makeCall } from '../dashboard/seed'

/**
 * A rule's session window with no session that spent money shows the key's session of only calls
 * of no known price (./unpriced-session-only.test.ts), read from the last 24 hours of such calls:
 * read whole at every answer of `/api/dashboard/budgets` (an attached tray's, every 2 seconds),
 * uncached, where a calendar period's are read once while the index's range of them is unchanged.
 * They are now read so too: the whole hours before the last one or so only when their signature
 * moved. The answer stays right when a call lands, in those hours (an import, a call stamped
 * earlier) or now. On both stores, over HTTP.
 */
const h = usePostgres({ upstream: modelEchoUpstream('chatcmpl-unpriced-session-cache') })

afterEach(() => {
  vi.useRealTimers()
})

const HOUR = 3600_000

/**
 * The clock set to 10 minutes past the next hour: the hours kept move on at each whole hour, so
 * the reads counted are those of one hour's answers, however long the test runs (under 50 minutes).
 */
function midHour(): void {
  vi.useFakeTimers({ toFake: ['Date'], shouldAdvanceTime: true })
  vi.setSystemTime(Math.floor(Date.now() / HOUR) * HOUR + HOUR + 10 * 60_000)
}
const UNKNOWN = 'mystery-model-9000'
const K = 'sk-usc-aaaaaaaaaaaa-0001'
const RULES = [{ api_key_pattern: 'sk-usc-*', session_limit_usd: 3, action: 'warn' }]

type Win = { period: string; spent_usd: number; unpriced_requests: number; session?: string | null }
type Entry = { rule: { api_key_pattern: string }; api_key_hash: string | null; windows: Win[] }

/** Reads of the key's sessions' unpriced calls over more than an hour of the index (the whole hours a cache can keep). */
function countHourReads(t: TestServer): () => number {
  const store = t.server.context.store
  const all = store.all.bind(store)
  let reads = 0
  store.all = (async (sql: string, params?: any) => {
    if (sql.includes('max(ts) AS last') && typeof params?.end === 'number' && params.end - params.start > HOUR) reads++
    return all(sql, params)
  }) as typeof store.all
  return () => reads
}

async function check(t: TestServer): Promise<void> {
  const send = async (session: string) => {
    const r = await postJson(`${t.url}/v1/chat/completions`, { model: UNKNOWN, messages: [{ role: 'user', content: 'hi' }] }, {
      authorization: `Bearer ${K}`, 'x-burnrate-session': session,
    })
    expect(r.status, r.text).toBe(200)
  }
  /** Calls of the key's of no known price, stamped `ago` ms before now (as an import of its logs stores them). */
  const stamped = async (session: string, n: number, ago: number) => {
    const now = Date.now()
    for (let i = 0; i < n; i++) {
      t.server.ledger.record(makeCall({ ts: now - ago + i, api_key_hash: hashKey(K), key_hint: 'sk-…0001', session, model: UNKNOWN, cost_usd: 0, priced: false }))
    }
    expect(await t.server.ledger.flushed()).toBe(true)
  }
  const window = async (): Promise<Win | undefined> => {
    const r = await getJson(`${t.url}/api/dashboard/budgets`)
    expect(r.status).toBe(200)
    return (r.body.rules as Entry[]).find((e) => e.rule.api_key_pattern === 'sk-usc-*' && e.api_key_hash === hashKey(K))?.windows.find((w) => w.period === 'session')
  }
  // One call now (the key's first), two of another session five hours ago.
  await send('s-now')
  await stamped('s-old', 2, 5 * HOUR)
  const reads = countHourReads(t)
  expect(await window()).toMatchObject({ session: 's-old', spent_usd: 0, unpriced_requests: 2 })
  expect(reads()).toBe(1)
  // Asked again with nothing new: the same answer, those hours not read again.
  expect(await window()).toMatchObject({ session: 's-old', spent_usd: 0, unpriced_requests: 2 })
  expect(reads()).toBe(1)
  // Three calls of a third session land in those hours (stamped four hours ago): read again, and shown.
  await stamped('s-mid', 3, 4 * HOUR)
  expect(await window()).toMatchObject({ session: 's-mid', spent_usd: 0, unpriced_requests: 3 })
  expect(reads()).toBe(2)
  // Three more now: the session of now has four, and is shown; the hours before are not read again.
  for (let i = 0; i < 3; i++) await send('s-now')
  expect(await t.server.ledger.flushed()).toBe(true)
  expect(await window()).toMatchObject({ session: 's-now', spent_usd: 0, unpriced_requests: 4 })
  expect(reads()).toBe(2)
}

describe("a rule's session window of only unpriced calls, asked again", () => {
  it('is read from the hours kept while they are unchanged, and stays right as calls land, on PostgreSQL', async () => {
    midHour()
    await check(await h.server({ config: { timezone: 'UTC', budgets: { rules: RULES } } }))
  })

  it('is read from the hours kept while they are unchanged, and stays right as calls land, on SQLite', async () => {
    midHour()
    await check(await h.server({ url: null, config: { timezone: 'UTC', budgets: { rules: RULES } } }))
  })
})
