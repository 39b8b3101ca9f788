import { spawnSync } from 'node:child_process'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { insertCalls } from '../../src/main/ledger/pg/insert'
import type { CallRecord } from '../../src/main/ledger/record'
import { ensurePostgresSchema } from '../../src/main/storage/postgres-migrations'
import { makeCall } from '../dashboard/seed'
import { usePostgres } from '../support/pg-harness'
import { postgresBin, startPostgres } from '../support/postgres'

/**
 * An export reads the calls as the database holds them at one moment (a REPEATABLE READ
 * transaction), whatever server the database was moved to. The build before kept each call's
 * inserting transaction id (calls.insert_xid) and read it against the export's snapshot; a
 * database moved to another PostgreSQL server the ordinary way (pg_dump, then psql / pg_restore
 * into a new cluster; a logical-replication move does the same) carried those ids verbatim into a
 * cluster whose transaction counter is behind them, so every export left every moved call out
 * while the calls table (and every dashboard total and report) had them (found in review).
 */

const h = usePostgres({ upstream: false })

describe('export after the database was moved to another PostgreSQL cluster (pg_dump | psql)', () => {
  it('holds the calls the moved database holds', async () => {
    // Cluster A: the Burnrate database's original server, which has run a while (its xid counter is ahead of a new cluster's).
    const urlA = h.database()
    const storeA = h.store(urlA)
    await ensurePostgresSchema(storeA)
    // Some history: a few thousand transactions' worth of xids (subtransactions with a write each take one).
    await storeA.run('CREATE TABLE burn (x int)')
    await storeA.run(`DO $$ BEGIN FOR i IN 1..20000 LOOP BEGIN INSERT INTO burn VALUES (i); EXCEPTION WHEN others THEN NULL; END; END LOOP; END $$`)
    await storeA.run('DROP TABLE burn')
    const now = Date.now()
    const calls: CallRecord[] = []
    for (let i = 0; i < 50; i++) calls.push({ ...makeCall({ ts: now - 3_600_000 + i * 1000, cost_usd: 0.01, session: `moved-${i}` }), call_key: `moved.${i}` })
    await storeA.transaction((tx) => insertCalls(tx, calls))

    // Cluster B: the new server, fresh.
    const b = await startPostgres()
    h.onTeardown(() => b.stop())
    const urlB = b.createDatabase()
    const bin = postgresBin()!
    const dump = spawnSync(join(bin, 'pg_dump'), ['--no-owner', urlA], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 })
    expect(dump.status, dump.stderr).toBe(0)
    const load = spawnSync(join(bin, 'psql'), ['-q', '-v', 'ON_ERROR_STOP=1', urlB], { input: dump.stdout, encoding: 'utf8' })
    expect(load.status, load.stderr).toBe(0)

    const storeB = h.store(urlB)
    expect(Number((await storeB.get<{ n: string }>('SELECT count(*) AS n FROM calls'))!.n)).toBe(50)
    // The case the old per-row ids failed: cluster A's transaction counter is ahead of cluster B's.
    const counter = async (s: typeof storeA) => BigInt((await s.get<{ x: string }>('SELECT pg_current_xact_id()::text AS x'))!.x)
    expect(await counter(storeA)).toBeGreaterThan(await counter(storeB))

    // Burnrate on the moved database.
    const t = await h.server({ url: urlB, config: { timezone: 'UTC' } })
    const csv = await (await fetch(`${t.url}/api/dashboard/export?range=24h&format=csv`)).text()
    const rows = csv.trim().split('\r\n').length - 1
    // The 50 calls the database holds (the build before: 0).
    expect(rows).toBe(50)
  }, 180_000)
})
