import { describe, expect, it } from 'vitest'
import { insertCalls } from '../../src/main/ledger/pg/insert'
import type { CallRecord } from '../../src/main/ledger/record'
import { createLogger } from '../../src/main/log'
import { ensurePostgresSchema } from '../../src/main/storage/postgres-migrations'
import { makeCall } from '../dashboard/seed'
import { exportStalled } from '../support/export-paused'
import { eventually } from '../support/http'
import { usePostgres } from '../support/pg-harness'

/**
 * On PostgreSQL an export holds one REPEATABLE READ transaction, on one of the 2 connections
 * exports may take, until its last byte. A client that stops reading without hanging up (a
 * stalled browser tab, a script paused in a debugger) used to hold both for ever: two of them
 * refused every other export, and the old snapshot kept VACUUM from cleaning up. Now an export
 * whose client takes none of its bytes for `dashboard.export_stall_ms` is ended: the client sees a
 * cut-off download (never a well-formed short file), the transaction and the connection are
 * given back, and one line is logged per export ended.
 */

const h = usePostgres({ upstream: false })
const N = 40_000
const PATH = '/api/dashboard/export?range=24h&format=json'

describe('a stalled export on PostgreSQL', () => {
  it('is ended after the stall limit: its snapshot and connection go back, and the next exports are served', async () => {
    const url = h.database()
    const lines: string[] = []
    const log = createLogger('info', (l) => lines.push(l))
    // Long enough that an export read on (below) never waits that long on a busy machine; short for a test.
    const t = await h.server({ url, config: { timezone: 'UTC', dashboard: { export_stall_ms: 1500 } }, log })
    const store = h.store(url)
    await ensurePostgresSchema(store)
    const now = Date.now()
    const seeds: CallRecord[] = []
    for (let i = 0; i < N; i++) seeds.push({ ...makeCall({ ts: now - 20 * 3_600_000 + i * 1000, cost_usd: 0.001 }), call_key: `seed.${i}` })
    for (let i = 0; i < N; i += 5_000) await store.transaction((tx) => insertCalls(tx, seeds.slice(i, i + 5_000)))

    // Connections to this database, other than this one, holding a snapshot (an export's transaction).
    const held = async () =>
      (await store.get<{ n: number }>(
        `SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND backend_type = 'client backend'
           AND pid <> pg_backend_pid() AND state IN ('active', 'idle in transaction') AND backend_xmin IS NOT NULL`,
      ))!.n

    // Two exports, the most the default pool of 10 runs at once, each stalled by a client that stays connected.
    const a = exportStalled(t.url, PATH)
    const b = exportStalled(t.url, PATH)
    await Promise.all([a.begun, b.begun])

    // Their transactions end and their connections go back without either client doing anything.
    await eventually(async () => (await held()) === 0, 60_000)
    // Each client, reading on, sees its download cut off, not a short file that parses.
    expect(await Promise.all([a.readOn(), b.readOn()])).toEqual(['cut', 'cut'])
    // Logged once per export ended.
    expect(lines.filter((l) => l.includes('export stalled')).length).toBe(2)

    // Both places are free again: two whole exports at once, every call in each.
    const whole = async () => {
      const r = await fetch(`${t.url}${PATH}`)
      expect(r.status).toBe(200)
      return ((await r.json()) as { calls: unknown[] }).calls.length
    }
    expect(await Promise.all([whole(), whole()])).toEqual([N, N])
    // Each ends its transaction once its last byte is written, which a client can read first.
    await eventually(async () => (await held()) === 0, 60_000)
    expect(lines.filter((l) => l.includes('export stalled')).length).toBe(2)
  }, 180_000)
})
