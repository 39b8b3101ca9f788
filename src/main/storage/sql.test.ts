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
