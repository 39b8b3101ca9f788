import { expect, it } from 'vitest'
import { writeBatch } from '../../src/main/ledger/pg/write-batch'
import { SpendTracker } from '../../src/main/ledger/spend'
import { migratePostgres } from '../../src/main/storage/postgres-migrations'
import { startOfDay, startOfMonth } from '../../src/main/time/zone'
import { makeCall } from '../dashboard/seed'
import { usePostgres } from '../support/pg-harness'

/**
 * The PostgreSQL ledger adds the spend already stored to what it counted in memory before its
 * first write (today's and this month's: the tray, the budgets API's overall, spend_today_usd).
 * A read begun before local midnight and answered after it, once a call of the new day had been
 * counted, added the ended day's whole spend to the new day's.
 */
const h = usePostgres({ upstream: false })
const TZ = 'UTC'

it("the stored spend read at start-up across midnight is not added to the new day's", async () => {
  const store = h.store(h.database())
  await migratePostgres(store)
  // This month began before today (the read's calls are this month's either way).
  const midnight = startOfDay(Date.now(), TZ)
  const sameMonth = startOfMonth(midnight - 1000, TZ) === startOfMonth(midnight, TZ)
  const stored = makeCall({ ts: midnight - 60_000, cost_usd: 2 })
  const dropped: unknown[] = []
  await writeBatch(store, [], [stored], (err) => dropped.push(err))
  expect(dropped).toEqual([])
  const spend = new SpendTracker(TZ)
  // The read begins a second before midnight; a call of the new day is counted while it is under way.
  const loading = spend.loadStore(store, midnight - 1000)
  spend.addCall(makeCall({ ts: midnight + 500, cost_usd: 0.25 }), midnight + 1000)
  await loading
  const after = midnight + 2000
  expect(spend.totals(after)).toEqual({ day: 0.25, month: sameMonth ? 2.25 : 0.25 })
  expect(spend.key(stored.api_key_hash, after)).toEqual({ day: 0.25, month: sameMonth ? 2.25 : 0.25 })
})
