import { expect, it } from 'vitest'
import { ProviderStats } from '../../src/main/admin/provider-stats'
import { writeBatch } from '../../src/main/ledger/pg/write-batch'
import { migratePostgres } from '../../src/main/storage/postgres-migrations'
import { startOfDay } from '../../src/main/time/zone'
import { makeCall } from '../dashboard/seed'
import { usePostgres } from '../support/pg-harness'

/**
 * The admin API's provider status (requests_today, errors_today, last call) is read from
 * PostgreSQL at start-up while calls already arrive: a read begun before local midnight and
 * answered after it set the status back to the ended day, and the calls of the new day counted
 * meanwhile were lost (the next call started the day again without them).
 */
const h = usePostgres({ upstream: false })
const TZ = 'UTC'

it("a start-up read answered after midnight keeps the new day's calls counted meanwhile, and none of the ended day's", async () => {
  const store = h.store(h.database())
  await migratePostgres(store)
  const midnight = startOfDay(Date.now(), TZ)
  const call = makeCall({ ts: midnight - 60_000, provider: 'openai' })
  // A call of the ending day, stored as the PostgreSQL ledger stores it.
  const dropped: unknown[] = []
  await writeBatch(store, [], [call], (err) => dropped.push(err))
  expect(dropped).toEqual([])
  const stats = new ProviderStats(TZ)
  // The read begins a second before midnight; a call arrives just after it, while the read is under way.
  const seeding = stats.seed(store, midnight - 1000)
  stats.observe(makeCall({ ts: midnight + 500, provider: 'anthropic', latency_ms: 40 }), midnight + 1000)
  await seeding
  expect(stats.get('anthropic', midnight + 2000)).toMatchObject({ requests: 1, lastAt: midnight + 500 })
  expect(stats.get('openai', midnight + 2000)).toBeUndefined()
})
