import { type ClientRequest, get } from 'node:http'
import { describe, expect, it } from 'vitest'
import { insertCalls } from '../../src/main/ledger/pg/insert'
import type { CallRecord } from '../../src/main/ledger/record'
import { ensurePostgresSchema } from '../../src/main/storage/postgres-migrations'
import { makeCall } from '../dashboard/seed'
import { eventually } from '../support/http'
import { usePostgres } from '../support/pg-harness'

/**
 * On PostgreSQL an export reads in one REPEATABLE READ, READ ONLY transaction on one connection,
 * held while it streams (as pg_dump does). The connection goes back to the pool when the client
 * hangs up halfway, and no more than a quarter of the pool (2 of the default 10) is ever held by
 * exports: one more is refused with a clear 503, so exports cannot take the connections the
 * ledger writes with.
 */

const h = usePostgres({ upstream: false })
const N = 40_000

/** An export whose first bytes have arrived and whose client then stops reading (the server waits on it). */
function pausedExport(base: string): Promise<ClientRequest> {
  return new Promise((resolve, reject) => {
    const req = get(`${base}/api/dashboard/export?range=24h&format=json`, (res) => {
      expect(res.statusCode).toBe(200)
      res.once('data', () => {
        res.pause()
        resolve(req)
      })
      res.on('error', () => {})
    })
    req.on('error', (err) => {
      if (!req.destroyed) reject(err)
    })
  })
}

describe('export connections on PostgreSQL', () => {
  it('holds one snapshot transaction per export, gives it back when the client hangs up, and refuses exports past the limit', async () => {
    const url = h.database()
    const t = await h.server({ url, config: { timezone: 'UTC' } })
    const store = h.store(url)
    await ensurePostgresSchema(store)
    const now = Date.now()
    const seeds: CallRecord[] = []
    for (let i = 0; i < N; i++) seeds.push({ ...makeCall({ ts: now - 20 * 3_600_000 + i * 1000, cost_usd: 0.001 }), call_key: `seed.${i}` })
    for (let i = 0; i < N; i += 5_000) await store.transaction((tx) => insertCalls(tx, seeds.slice(i, i + 5_000)))

    // Other connections to this database in a transaction holding a snapshot (an export, reading or waiting on its client).
    const held = async () =>
      (await store.get<{ n: number }>(
        `SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND backend_type = 'client backend'
           AND pid <> pg_backend_pid() AND state IN ('active', 'idle in transaction') AND backend_xmin IS NOT NULL`,
      ))!.n

    // Two exports, the limit with the default pool of 10, each stalled by its client.
    const a = await pausedExport(t.url)
    const b = await pausedExport(t.url)
    await eventually(async () => (await held()) === 2)

    // A third is refused at once, in the contract's error shape, before it takes a connection.
    const refused = await fetch(`${t.url}/api/dashboard/export?range=24h&format=csv`)
    expect(refused.status).toBe(503)
    expect(refused.headers.get('retry-after')).toBe('10')
    const body = (await refused.json()) as { error: { type: string; message: string } }
    expect(body.error.type).toBe('service_unavailable')
    expect(body.error.message).toMatch(/2 exports are already running/)
    expect(await held()).toBe(2)

    // Both clients hang up mid-export: their transactions end and their connections go back.
    a.destroy()
    b.destroy()
    await eventually(async () => (await held()) === 0)

    // Both places are free again: two whole exports at once, every call in each.
    const whole = async () => {
      const r = await fetch(`${t.url}/api/dashboard/export?range=24h&format=csv`)
      expect(r.status).toBe(200)
      return (await r.text()).trim().split('\r\n').length - 1
    }
    expect(await Promise.all([whole(), whole()])).toEqual([N, N])
    // (An export's transaction ends just after its last byte is sent: a client can read it first.)
    await eventually(async () => (await held()) === 0)
  }, 180_000)
})
