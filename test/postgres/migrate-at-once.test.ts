import { describe, expect, it } from 'vitest'
import { PG_MIGRATIONS, migratePostgres } from '../../src/main/storage/postgres-migrations'
import { usePostgres } from '../support/pg-harness'

/**
 * Several instances starting at once on one database, new or left at an older schema: each runs
 * the migrations it lacks under one advisory lock, so exactly one applies each migration and every
 * one starts, at the newest version.
 */
describe('instances migrating one PostgreSQL at once', () => {
  const h = usePostgres({ upstream: false })
  const latest = PG_MIGRATIONS.reduce((m, x) => Math.max(m, x.version), 0)

  for (const from of [0, 1, 10, latest - 3]) {
    it(`all start, from schema version ${from}`, async () => {
      const url = h.database()
      if (from > 0) await migratePostgres(h.store(url), PG_MIGRATIONS.filter((m) => m.version <= from))
      const stores = Array.from({ length: 6 }, () => h.store(url))
      const out = await Promise.allSettled(stores.map((s) => migratePostgres(s)))
      expect(out.map((r) => (r.status === 'fulfilled' ? r.value : String(r.reason)))).toEqual(stores.map(() => latest))
      const versions = await stores[0].all<{ version: number }>('SELECT version FROM burnrate_schema ORDER BY version')
      expect(versions.map((v) => v.version)).toEqual(PG_MIGRATIONS.map((m) => m.version))
    })
  }
})
