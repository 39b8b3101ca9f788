import { describe, expect, it } from 'vitest'
import { insertCalls } from '../../src/main/ledger/pg/insert'
import type { CallRecord } from '../../src/main/ledger/record'
import type { PostgresStore } from '../../src/main/storage/postgres'
import { ensurePostgresSchema } from '../../src/main/storage/postgres-migrations'
import { makeCall } from '../dashboard/seed'
import { exportPausedAfterFirstBytes } from '../support/export-paused'
import { usePostgres } from '../support/pg-harness'

/**
 * On PostgreSQL an export is the window's calls as the database held them when it began. Ids come
 * from a sequence there and instances commit out of id order, so a bound on ids is no moment's
 * state: a call whose transaction took its id first and commits last (call A) would be in an
 * export bounded by an id taken after it (call C's), beside the absence of a call committed
 * before it (call D). And a call updated while the export streams (a re-price) is still in it.
 */

const h = usePostgres({ upstream: false })
const N = 40_000
let seq = 0
const call = (over: Partial<CallRecord>): CallRecord => ({ ...makeCall({ cost_usd: 0.001, ...over }), call_key: `seed.${seq++}` })

/** Inserts `rows` in one committed transaction, as another instance's batch. */
const commit = (store: PostgresStore, rows: CallRecord[]) => store.transaction((tx) => insertCalls(tx, rows))

describe('export on PostgreSQL while other transactions commit', () => {
  it('holds the calls committed when it began: not a call committed during it with an older id, nor one after; an updated call stays', async () => {
    const url = h.database()
    const t = await h.server({ url, config: { timezone: 'UTC' } })
    const store = h.store(url)
    await ensurePostgresSchema(store)
    const now = Date.now()
    const start = now - 20 * 3_600_000
    const seeds: CallRecord[] = []
    for (let i = 0; i < N; i++) seeds.push(call({ ts: start + Math.floor((i * 19 * 3_600_000) / N) }))
    seeds.push(call({ ts: now - 45 * 60_000, session: 'call-U' }))
    for (let i = 0; i < seeds.length; i += 5_000) await commit(store, seeds.slice(i, i + 5_000))

    // A: its transaction takes its id, then stays open (a long batch of another instance).
    let release!: () => void
    const held = new Promise<void>((r) => (release = r))
    let inserted!: () => void
    const aInserted = new Promise<void>((r) => (inserted = r))
    const aCommitted = store.transaction(async (tx) => {
      await insertCalls(tx, [call({ ts: now - 40 * 60_000, session: 'call-A' })])
      inserted()
      await held
    })
    await aInserted
    // C: a larger id than A's, committed before the export begins.
    await commit(store, [call({ ts: now - 50 * 60_000, session: 'call-C' })])

    const body = await exportPausedAfterFirstBytes(t.url, '/api/dashboard/export?range=24h&format=csv', async () => {
      // D commits, then A: both after the export began, A with the older id.
      await commit(store, [call({ ts: now - 35 * 60_000, session: 'call-D' })])
      release()
      await aCommitted
      // U, in the export's snapshot, is re-priced meanwhile.
      expect(await store.run("UPDATE calls SET cost_usd = 5 WHERE session = 'call-U'")).toBe(1)
    })
    const has = (s: string) => body.includes(`,${s},`)
    const rows = body.trim().split('\r\n').length - 1
    expect({ A: has('call-A'), C: has('call-C'), D: has('call-D'), U: has('call-U'), rows }).toEqual({ A: false, C: true, D: false, U: true, rows: N + 2 })
    // Every call is there for the next export.
    const after = (await (await fetch(`${t.url}/api/dashboard/export?range=24h&format=csv`)).text()).trim().split('\r\n').length - 1
    expect(after).toBe(N + 4)
  }, 120_000)
})
