import Database from 'better-sqlite3'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startPostgres, type TestPostgres } from '../../../test/support/postgres'
import { PostgresStore } from './postgres'
import type { SqlStore } from './sql'
import { SqliteStore, } from './sqlite'
import { toPositional } from './sql'

describe('named parameters for PostgreSQL', () => {
  it('numbers names in order and reuses a repeated name', () => {
    expect(toPositional('SELECT @a, @b, @a')).toEqual({ text: 'SELECT $1, $2, $1', names: ['a', 'b'] })
  })
})

let pgServer: TestPostgres
const stores: Record<string, SqlStore> = {}

beforeAll(async () => {
  pgServer = await startPostgres()
  stores.sqlite = new SqliteStore(new Database(':memory:'))
  stores.postgres = new PostgresStore(pgServer.createDatabase())
})
afterAll(async () => {
  await stores.postgres?.close()
  pgServer?.stop()
})

describe.each(['sqlite', 'postgres'])('the %s store', (name) => {
  it('answers the same SQL the same way', async () => {
    const s = stores[name]
    await s.run('CREATE TABLE t (id TEXT PRIMARY KEY, ts BIGINT NOT NULL, cost DOUBLE PRECISION NOT NULL, n INTEGER NOT NULL)')
    await s.run('INSERT INTO t (id, ts, cost, n) VALUES (@id, @ts, @cost, @n)', { id: 'a', ts: 1_790_000_000_123, cost: 0.1, n: 3 })
    await s.run('INSERT INTO t (id, ts, cost, n) VALUES (@id, @ts, @cost, @n)', { id: 'b', ts: 1_790_000_000_456, cost: 0.2, n: 4 })
    // Upsert in the shared form.
    await s.run('INSERT INTO t (id, ts, cost, n) VALUES (@id, @ts, @cost, @n) ON CONFLICT (id) DO UPDATE SET n = t.n + excluded.n', { id: 'b', ts: 0, cost: 0, n: 1 })
    const row = await s.get<{ calls: number; cost: number; n: number; last: number }>(
      'SELECT COUNT(*) AS calls, SUM(cost) AS cost, SUM(n) AS n, MAX(ts) AS last FROM t WHERE ts >= @since',
      { since: 0 },
    )
    expect(row).toEqual({ calls: 2, cost: 0.1 + 0.2, n: 8, last: 1_790_000_000_456 })
  })

  it('rolls a failed transaction back and keeps a committed one', async () => {
    const s = stores[name]
    await s.run('CREATE TABLE u (id INTEGER PRIMARY KEY)')
    await expect(s.transaction(async (tx) => {
      await tx.run('INSERT INTO u (id) VALUES (@id)', { id: 1 })
      throw new Error('boom')
    })).rejects.toThrow('boom')
    await s.transaction(async (tx) => {
      await tx.run('INSERT INTO u (id) VALUES (@id)', { id: 2 })
    })
    expect(await s.all('SELECT id FROM u ORDER BY id')).toEqual([{ id: 2 }])
  })
})

describe('the PostgreSQL schema', () => {
  it('migrates once, even when several instances start at the same time', async () => {
    const { PostgresStore } = await import('./postgres')
    const { migratePostgres, PG_MIGRATIONS } = await import('./postgres-migrations')
    const url = pgServer.createDatabase()
    const a = new PostgresStore(url)
    const b = new PostgresStore(url)
    try {
      const latest = PG_MIGRATIONS.at(-1)!.version
      expect(await Promise.all([migratePostgres(a), migratePostgres(b)])).toEqual([latest, latest])
      expect(await a.all('SELECT version FROM burnrate_schema ORDER BY version')).toEqual(PG_MIGRATIONS.map((m) => ({ version: m.version })))
      const cols = await a.all<{ column_name: string }>(
        "SELECT column_name FROM information_schema.columns WHERE table_name = 'calls' ORDER BY ordinal_position",
      )
      expect(cols.map((c) => c.column_name)).toContain('member')
    } finally {
      await a.close()
      await b.close()
    }
  })
})

describe('the two schemas', () => {
  it('have the same tables and columns for everything PostgreSQL stores', async () => {
    const { openDatabase } = await import('../ledger/db')
    const { PostgresStore } = await import('./postgres')
    const { migratePostgres, PG_ONLY_TABLES } = await import('./postgres-migrations')
    const lite = openDatabase(':memory:')
    const pgStore = new PostgresStore(pgServer.createDatabase())
    try {
      await migratePostgres(pgStore)
      const tables = await pgStore.all<{ table_name: string }>(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' AND table_name <> 'burnrate_schema' AND table_name <> ALL(@pgOnly::text[]) ORDER BY table_name",
        { pgOnly: PG_ONLY_TABLES },
      )
      expect(tables.length).toBeGreaterThan(5)
      for (const { table_name } of tables) {
        const pgCols = await pgStore.all<{ column_name: string }>(
          'SELECT column_name FROM information_schema.columns WHERE table_name = @t ORDER BY column_name',
          { t: table_name },
        )
        const liteCols = (lite.prepare(`PRAGMA table_info(${table_name})`).all() as { name: string }[]).map((c) => c.name).sort()
        expect({ table_name, cols: pgCols.map((c) => c.column_name) }).toEqual({ table_name, cols: liteCols })
      }
    } finally {
      lite.close()
      await pgStore.close()
    }
  })
})
