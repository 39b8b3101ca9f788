import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { PgAnnounced, SqliteAnnounced } from '../../src/main/budgets/announced'
import { openDatabase } from '../../src/main/ledger/db'
import { Ledger } from '../../src/main/ledger/ledger'
import { ensurePostgresSchema } from '../../src/main/storage/postgres-migrations'
import type { PostgresStore } from '../../src/main/storage/postgres'
import { until, usePostgres } from '../support/pg-harness'

/**
 * AnnouncedStore's contract (budgets/announced.ts): "rows of ended periods are deleted with the
 * next one kept". SQLite's save does it in the same batch; PostgreSQL's save only inserted, so an
 * instance left running kept every threshold of every key of every day/week/month it announced in
 * budget_announced until its next reload (found in review, ledger-today). Its save now deletes
 * them too, once an hour at most per instance.
 */

const h = usePostgres({ upstream: false })
const HOUR = 3_600_000
const DAY = 24 * HOUR

async function ids(store: PostgresStore): Promise<string[]> {
  return (await store.all<{ id: string }>('SELECT id FROM budget_announced ORDER BY id')).map((r) => r.id)
}

async function has(store: PostgresStore, id: string): Promise<boolean> {
  return (await store.get('SELECT 1 AS x FROM budget_announced WHERE id = @id', { id })) !== undefined
}

describe('budget_announced: the rows of ended periods', () => {
  it('SQLite deletes them with the next threshold kept (the reference behaviour)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'burnrate-annc-'))
    try {
      const db = openDatabase(join(dir, 'burnrate.db'))
      const ledger = new Ledger(db, { flushIntervalMs: 10, maxPending: 1000, timezone: 'UTC' })
      const store = new SqliteAnnounced(db, ledger)
      const now = Date.now()
      store.save('yesterday', now - DAY / 2, now - DAY)
      expect(ledger.flush()).toBe(true)
      store.save('today', now + DAY / 2, now)
      expect(ledger.flush()).toBe(true)
      expect((db.prepare('SELECT id FROM budget_announced ORDER BY id').all() as { id: string }[]).map((r) => r.id)).toEqual(['today'])
      ledger.close()
      db.close()
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it('PostgreSQL: an instance running for 30 days keeps only the thresholds of periods not ended, as it saves', async () => {
    const url = h.database()
    const store = h.store(url)
    await ensurePostgresSchema(store)
    const announced = new PgAnnounced(store)
    const now = Date.now()
    // One threshold announced each day, its period ending that day; never loaded again meanwhile.
    for (let d = 30; d >= 1; d--) {
      const at = now - d * DAY
      announced.save(`day-${d}`, at + DAY / 2, at)
      await until(`day-${d} kept, the day before deleted`, async () => (await ids(store)).join() === `day-${d}`)
    }
    announced.save('today', now + DAY / 2, now)
    await until('only today kept', async () => (await ids(store)).join() === 'today')
    expect(await ids(store)).toEqual(['today'])
    // The delete goes by `until` (migration 17): an index, not a scan of the whole table.
    const indexes = await store.all<{ indexdef: string }>("SELECT indexdef FROM pg_indexes WHERE tablename = 'budget_announced'")
    expect(indexes.some((i) => /\(until\)$/.test(i.indexdef))).toBe(true)
  })

  it('PostgreSQL: within the hour a save only inserts; the first an hour on deletes what ended meanwhile', async () => {
    const url = h.database()
    const store = h.store(url)
    await ensurePostgresSchema(store)
    const announced = new PgAnnounced(store)
    const t0 = Date.now()
    announced.save('ends-in-10-min', t0 + 10 * 60_000, t0)
    await until('the first row is kept', () => has(store, 'ends-in-10-min'))
    // 30 and 59 minutes on: the first row's period has ended, but this instance deleted less than an hour ago.
    announced.save('later-1', t0 + DAY, t0 + 30 * 60_000)
    await until('later-1 is kept', () => has(store, 'later-1'))
    announced.save('later-2', t0 + DAY, t0 + 59 * 60_000)
    await until('later-2 is kept', () => has(store, 'later-2'))
    expect(await ids(store)).toEqual(['ends-in-10-min', 'later-1', 'later-2'])
    // An hour after its last delete: the ended row goes with the save.
    announced.save('later-3', t0 + DAY, t0 + HOUR)
    await until('the ended row is deleted', async () => (await ids(store)).join() === 'later-1,later-2,later-3')
    // Another instance (a PgAnnounced of its own) deletes at its first save, whatever this one did.
    const other = new PgAnnounced(store)
    announced.save('ends-in-70-min', t0 + 70 * 60_000, t0 + HOUR + 1)
    await until('ends-in-70-min is kept', () => has(store, 'ends-in-70-min'))
    other.save('other', t0 + DAY, t0 + 71 * 60_000)
    await until('the other instance deleted the ended row', async () => (await ids(store)).join() === 'later-1,later-2,later-3,other')
  })
})
