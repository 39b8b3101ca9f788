import Database from 'better-sqlite3'
import { describe, expect, it } from 'vitest'
import { budgetsOf } from '../../src/main/budgets'
import { createLogger } from '../../src/main/log'
import { hashKey } from '../../src/main/proxy/attribution'
import type { PostgresStore } from '../../src/main/storage/postgres'
import { getJson } from '../dashboard/seed'
import { request } from '../support/http'
import { until, usePostgres } from '../support/pg-harness'
import { EXPECTED, OUTPUT, storedAfter } from './batch-support'

// PostgreSQL (`storage.url`): the same Batch API output file read through two instances at
// once. Each request is stored once in the shared ledger and counted once in the block rule's
// shared spend row, whichever instance stored it.

const BATCH = { id: 'batch_pg01', object: 'batch', endpoint: '/v1/chat/completions', status: 'validating', input_file_id: 'file-pg-input' }
const h = usePostgres({
  upstream: (req) =>
    req.method === 'POST' ? { headers: { 'content-type': 'application/json' }, body: JSON.stringify(BATCH) } : { headers: { 'content-type': 'application/octet-stream' }, body: OUTPUT },
})
const KEY = 'sk-pgbatch-key-aaaaaaaaaa'

const close = (a: number, b: number) => Math.abs(a - b) <= Math.max(Math.abs(a), Math.abs(b)) * 1e-9

describe('Batch API results on PostgreSQL', () => {
  it('read through two instances at once: each request stored and counted in the shared spend once', async () => {
    const url = h.database()
    const config = { timezone: 'UTC', budgets: { rules: [{ api_key_pattern: 'sk-pgbatch-*', daily_limit_usd: 1000, action: 'block' }] } }
    const a = await h.server({ url, config })
    const b = await h.server({ url, config })
    const store = h.store(url)
    // The batch is created through Burnrate (a call that costs nothing itself), as a script on the SDK does.
    const created = await request(`${a.url}/v1/batches`, {
      method: 'POST', headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ input_file_id: 'file-pg-input', endpoint: '/v1/chat/completions', completion_window: '24h' }),
    })
    expect(created.json()).toMatchObject({ id: 'batch_pg01' })
    const read = (t: { url: string }) => request(`${t.url}/v1/files/file-pg-output/content`, { headers: { authorization: `Bearer ${KEY}` } })
    const [ra, rb] = await Promise.all([read(a), read(b)])
    expect(ra.body.equals(OUTPUT)).toBe(true)
    expect(rb.body.equals(OUTPUT)).toBe(true)
    const batch = () =>
      store.all<{ response_id: string; cost_usd: number; api_key_hash: string }>(
        "SELECT response_id, cost_usd, api_key_hash FROM calls WHERE endpoint LIKE 'batch.%' AND response_id NOT LIKE 'chatcmpl-mark-%' ORDER BY ts",
      )
    await until('both reads are stored', async () =>
      (await store.get<{ n: number }>("SELECT count(*) AS n FROM calls WHERE endpoint = 'files.content'"))!.n === 2,
    )
    await until('the requests are stored', async () => (await batch()).length >= EXPECTED.length)
    // Each instance's recorder has stored what its read handed it once a read after it is stored.
    const inStore = async (id: string) => (await store.get<{ n: number }>('SELECT count(*)::int AS n FROM calls WHERE response_id = @id', { id }))!.n > 0
    await storedAfter(a, h.upstream, inStore)
    await storedAfter(b, h.upstream, inStore)
    const rows = await batch()
    expect(rows.map((r) => r.response_id)).toEqual(EXPECTED.map((e) => e.response_id))
    for (const [i, r] of rows.entries()) {
      expect(close(r.cost_usd, EXPECTED[i].cost_usd)).toBe(true)
      expect(r.api_key_hash).toBe(hashKey(KEY))
    }
    const total = EXPECTED.reduce((s, e) => s + e.cost_usd, 0)
    const spend = async () =>
      (await store.get<{ spent_usd: number }>("SELECT spent_usd FROM budget_spend WHERE api_key_hash = @k AND period = 'daily'", { k: hashKey(KEY) }))?.spent_usd
    // Both instances' stores are over (above): counted once.
    await until('the shared spend row counts them', async () => close((await spend()) ?? -1, total))
  })

  it("a batch stored while the meters are read again stays in them and in today's spend", async () => {
    const url = h.database()
    const KEY2 = 'sk-pgrace-key-bbbbbbbbbb'
    const t = await h.server({ url, config: { timezone: 'UTC', budgets: { rules: [{ api_key_pattern: 'sk-pgrace-*', daily_limit_usd: 1000, action: 'warn' }] } } })
    const store = h.store(url)
    const feed = budgetsOf(t.server.context).feed!
    // The start-up read of the meters is over.
    await feed.reload()
    const spent = async () =>
      (await getJson(`${t.url}/api/dashboard/budgets`)).body.rules.find((r: any) => r.api_key_hash === hashKey(KEY2))?.windows.find((w: any) => w.period === 'daily')
        ?.spent_usd ?? 0
    // Two locks hold a read of the meters where a busy database may: its rows are read (in a
    // snapshot taken before the batch is stored) and it waits for the thresholds announced.
    const held = (table: string) => {
      let release!: () => void
      const released = new Promise<void>((r) => (release = r))
      let pid = 0
      const locked = new Promise<void>((ok, fail) => {
        void store
          .transaction(async (tx) => {
            await tx.run(`LOCK TABLE ${table} IN ACCESS EXCLUSIVE MODE`)
            pid = (await tx.get<{ pid: number }>('SELECT pg_backend_pid() AS pid'))!.pid
            ok()
            await released
          })
          .catch(fail)
      })
      return { locked, release, pid: () => pid }
    }
    const waitingOn = (s: PostgresStore, table: string) =>
      s.get<{ n: number }>(`SELECT count(*)::int AS n FROM pg_locks WHERE NOT granted AND relation = '${table}'::regclass`).then((r) => r!.n)
    const announced = held('budget_announced')
    await announced.locked
    const calls = held('calls')
    await calls.locked
    const reading = feed.reload()
    await until('the read waits for the calls after taking its snapshot', async () => (await waitingOn(store, 'calls')) > 0)
    calls.release()
    await until('the read has read its rows and waits for the thresholds announced', async () => {
      const open = await store.get<{ n: number }>(
        `SELECT count(*)::int AS n FROM pg_stat_activity a
          WHERE a.datname = current_database() AND a.pid <> pg_backend_pid() AND a.pid <> @mine AND a.xact_start IS NOT NULL
            AND NOT EXISTS (SELECT 1 FROM pg_locks l WHERE l.pid = a.pid AND NOT l.granted AND l.relation = 'budget_announced'::regclass)`,
        { mine: announced.pid() },
      )
      return open!.n === 0 && (await waitingOn(store, 'budget_announced')) > 0
    })
    // Meanwhile the batch's output file is read: its requests are stored and counted.
    const r = await request(`${t.url}/v1/files/file-pgrace-output/content`, { headers: { authorization: `Bearer ${KEY2}` } })
    expect(r.body.equals(OUTPUT)).toBe(true)
    const total = EXPECTED.reduce((s, e) => s + e.cost_usd, 0)
    await until('the requests are stored and counted', async () => close(await spent(), total))
    announced.release()
    await reading
    // The read's rows do not have them, but they were stored and counted all the same.
    expect(close(await spent(), total)).toBe(true)
    expect(close(t.server.ledger.spend.key(hashKey(KEY2)).day, total)).toBe(true)
  }, 90_000)

  it("a batch whose keys meet the local file's lock after PostgreSQL stored it is counted in the meters and today's spend", async () => {
    // On PostgreSQL the import keys stay in this machine's SQLite file, written once the calls are
    // committed; `burnrate import` (or any tool) holding that file's lock a little longer than
    // RUNTIME_BUSY_MS made that write fail after the calls were in PostgreSQL, and the retry then
    // found them there (by response id) as recorded before: counted by no one here.
    const url = h.database()
    const KEY3 = 'sk-pglocal-key-dddddddddd'
    const lines: string[] = []
    const t = await h.server({ url, config: { timezone: 'UTC', budgets: { rules: [{ api_key_pattern: 'sk-pglocal-*', daily_limit_usd: 1000, action: 'warn' }] } }, log: createLogger('info', (l) => lines.push(l)) })
    const store = h.store(url)
    await budgetsOf(t.server.context).feed!.reload()
    const spent = async () =>
      (await getJson(`${t.url}/api/dashboard/budgets`)).body.rules.find((r: any) => r.api_key_hash === hashKey(KEY3))?.windows.find((w: any) => w.period === 'daily')
        ?.spent_usd ?? 0
    const local = new Database(t.dbFile)
    local.exec('BEGIN IMMEDIATE')
    try {
      const r = await request(`${t.url}/v1/files/file-pglocal-output/content`, { headers: { authorization: `Bearer ${KEY3}` } })
      expect(r.body.equals(OUTPUT)).toBe(true)
      await until('the requests are in PostgreSQL', async () => (await store.get<{ n: number }>("SELECT count(*)::int AS n FROM calls WHERE endpoint LIKE 'batch.%'"))!.n === EXPECTED.length)
      await until('the local keys could not be written', () => lines.some((l) => l.includes('batch results:') && /locked|busy/i.test(l)))
    } finally {
      local.exec('COMMIT')
    }
    await until('the keys are written', () => (local.prepare('SELECT count(*) AS n FROM import_keys').get() as { n: number }).n >= EXPECTED.length, 30_000)
    local.close()
    const total = EXPECTED.reduce((s, e) => s + e.cost_usd, 0)
    expect(close(await spent(), total)).toBe(true)
    expect(close(t.server.ledger.spend.key(hashKey(KEY3)).day, total)).toBe(true)
  }, 90_000)

  it('a batch read while PostgreSQL is away is stored once it is back', async () => {
    const url = h.database()
    const lines: string[] = []
    const t = await h.server({ url, config: { timezone: 'UTC' }, log: createLogger('info', (l) => lines.push(l)) })
    const store = h.store(url)
    h.pg.stopServer()
    try {
      const r = await request(`${t.url}/v1/files/file-pgaway-output/content`, { headers: { authorization: 'Bearer sk-pgaway-key-cccccccccc' } })
      expect(r.body.equals(OUTPUT)).toBe(true)
      await until('the requests could not be stored', () => lines.some((l) => l.includes('batch results: 3 requests')))
    } finally {
      h.pg.startServer()
    }
    const batch = () => store.all<{ response_id: string }>("SELECT response_id FROM calls WHERE endpoint LIKE 'batch.%' ORDER BY ts")
    await until('the requests are stored', async () => (await batch()).length >= EXPECTED.length, 90_000)
    expect((await batch()).map((r) => r.response_id)).toEqual(EXPECTED.map((e) => e.response_id))
  }, 120_000)
})

