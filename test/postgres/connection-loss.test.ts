import { expect, it } from 'vitest'
import { eventually } from '../support/http'
import { usePostgres } from '../support/pg-harness'

/** PostgreSQL going away under a transaction fails that transaction; it never ends the process. */

const h = usePostgres({ upstream: false })

it('a connection lost in the middle of a transaction fails it, and the store goes on with a new connection', async () => {
  const store = h.store(h.database())
  const admin = h.store(h.pg.url)
  await store.run('CREATE TABLE t (n integer)')
  await expect(
    store.transaction(async (tx) => {
      await tx.run('INSERT INTO t (n) VALUES (1)')
      const me = (await tx.get<{ pid: number }>('SELECT pg_backend_pid() AS pid'))!.pid
      await admin.get('SELECT pg_terminate_backend(@pid)', { pid: me })
      // Wait (no query in flight) until the server has really closed this backend.
      await eventually(async () => {
        const row = await admin.get<{ n: number }>('SELECT count(*) AS n FROM pg_stat_activity WHERE pid = @pid', { pid: me })
        if (row!.n !== 0) throw new Error('still connected')
        return true
      })
      await tx.run('INSERT INTO t (n) VALUES (2)')
    }),
  ).rejects.toThrow()
  // Nothing of the lost transaction was kept, and the pool answers on a fresh connection.
  expect(await store.get<{ n: number }>('SELECT count(*) AS n FROM t')).toEqual({ n: 0 })
  await store.transaction(async (tx) => tx.run('INSERT INTO t (n) VALUES (3)'))
  expect(await store.all<{ n: number }>('SELECT n FROM t')).toEqual([{ n: 3 }])
})
