import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { basename, join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { until, usePostgres } from '../../../../test/support/pg-harness'
import { spillFile, spillFiles } from '../../reliability/spill'
import type { PostgresStore } from '../../storage/postgres'
import { migratePostgres } from '../../storage/postgres-migrations'
import type { SqlStore } from '../../storage/sql'
import type { CallRecord } from '../record'
import type { StoredCall } from '../types'
import { PgLedger, type PgLedgerOptions } from './pg-ledger'

const h = usePostgres({ upstream: false })

function call(over: Partial<CallRecord> = {}): CallRecord {
  return {
    ts: Date.now(), provider: 'openai', model: 'gpt-4o-mini', endpoint: 'chat.completions', api_key_hash: 'h1', key_hint: 'sk-…abcd',
    tenant: '', agent: 'a', session: 's', status: 200, streamed: false, input_tokens: 1149, output_tokens: 353, cache_read_tokens: 1024,
    cache_write_tokens: 0, cache_write_1h_tokens: 0, reasoning_tokens: 0, cost_usd: 0.00033, priced: true, estimated: false,
    latency_ms: 12.5, error: null, ...over,
  }
}

function fresh(): { url: string; dir: string; store: PostgresStore } {
  const url = h.database()
  return { url, dir: h.tempDir('burnrate-pgl-'), store: h.store(url) }
}

function ledgerOn(store: SqlStore, dir: string, over: Partial<PgLedgerOptions> = {}): PgLedger {
  return new PgLedger(store, { flushIntervalMs: 20, maxPending: 10_000, timezone: 'UTC', dataDir: dir, ...over }).start()
}

/** Waits until no spill file is left in `dir`, asking the ledger for a pass meanwhile (its journal goes once a pass has stored it). */
const spillGone = (ledger: PgLedger, dir: string, what: string) =>
  until(what, () => {
    if (spillFiles(dir).length === 0) return true
    ledger.flush()
    return false
  })

const sessions = async (s: SqlStore) => (await s.all<{ session: string }>('SELECT session FROM calls ORDER BY id')).map((r) => r.session)

describe('the PostgreSQL ledger', () => {
  it('prunes the oldest calls before a time, at most a batch per step (ledger.retention_days)', async () => {
    const { store, dir } = fresh()
    const ledger = ledgerOn(store, dir)
    const now = Date.now()
    for (let i = 0; i < 5; i++) ledger.record(call({ ts: now - 90 * 86_400_000 + i, session: `old${i}` }))
    ledger.record(call({ ts: now, session: 'new' }))
    expect(await ledger.flushed()).toBe(true)
    const cutoff = now - 40 * 86_400_000
    expect(await ledger.prune(cutoff, 3)).toBe(3)
    expect(await sessions(store)).toEqual(['old3', 'old4', 'new'])
    expect(await ledger.prune(cutoff, 3)).toBe(2)
    expect(await ledger.prune(cutoff, 3)).toBe(0)
    expect(await sessions(store)).toEqual(['new'])
    await ledger.close()
  })

  it('writes recorded calls with every field exact, in one batch with its hooks', async () => {
    const { store, dir } = fresh()
    const ledger = ledgerOn(store, dir)
    const seen: StoredCall[][] = []
    ledger.onBatchTx(async (tx, rows) => {
      seen.push([...rows])
      // Inside the batch's transaction: the rows are visible to it.
      const n = await tx.get<{ n: number }>('SELECT COUNT(*) AS n FROM calls WHERE id = ANY(@ids::bigint[])', { ids: rows.map((r) => r.id) })
      expect(n?.n).toBe(rows.length)
    })
    const a = call({ session: 'a', cost_usd: 0.1 + 0.2, latency_ms: 1234.5678, error: null, response_id: 'chatcmpl-1', project: '/p', billing: 'api', requested_model: 'gpt-4o' })
    const b = call({ session: 'b', streamed: true, priced: false, estimated: true, status: 499, error: 'client_aborted', reasoning_tokens: 7, cache_write_1h_tokens: 3, source: 'import', member: 'ann', usage_extra: '{"web_searches":1}' })
    ledger.record(a)
    ledger.record(b)
    expect(await ledger.flushed()).toBe(true)
    const rows = await store.all<Record<string, unknown>>('SELECT * FROM calls ORDER BY id')
    expect(rows).toHaveLength(2)
    const { call_key: ka, id: ia, ...ra } = rows[0]
    const { call_key: kb, ...rb } = rows[1]
    expect(ra).toEqual({ ...a, streamed: 0, priced: 1, estimated: 0, source: 'proxy', member: '', origin_id: null, usage_extra: null, revision: null, superseded_by: null })
    expect(rb).toMatchObject({ ...b, id: (ia as number) + 1, streamed: 1, priced: 0, estimated: 1, response_id: '', project: '', billing: 'api', requested_model: null })
    expect(rows[0].cost_usd).toBe(0.1 + 0.2) // never rounded on the way in
    expect(typeof ka).toBe('string')
    expect(ka).not.toBe(kb)
    expect(seen.flat().map((r) => r.session)).toEqual(['a', 'b'])
    expect(seen.flat().map((r) => r.id)).toEqual(rows.map((r) => r.id))
    expect(ledger.status).toMatchObject({ writable: true, pending: 0, dropped: 0 })
    expect(ledger.storage).toMatchObject({ reachable: true, ready: true, spilled: 0, spill_files: 0 })
    await ledger.close()
  })

  it('does not count a batch twice when its COMMIT succeeded but the answer was lost', async () => {
    const { store, dir } = fresh()
    // The first commit's answer is lost on the way back (the connection drops after COMMIT).
    let lose = 1
    const lossy: SqlStore = Object.assign(Object.create(store), {
      async transaction<T>(fn: (tx: SqlStore) => Promise<T>): Promise<T> {
        const out = await store.transaction(fn)
        if (lose-- > 0) throw Object.assign(new Error('Connection terminated unexpectedly'), {})
        return out
      },
    })
    const ledger = ledgerOn(lossy, dir)
    const hooked: string[] = []
    ledger.onBatchTx(async (_tx, rows) => {
      for (const r of rows) hooked.push(r.session)
    })
    for (const s of ['x', 'y', 'z']) ledger.record(call({ session: s }))
    // The first attempt "fails": the calls stay queued and are sent again.
    expect(await ledger.flushed()).toBe(false)
    expect(ledger.status.writable).toBe(false)
    expect(await ledger.flushed()).toBe(true)
    expect(await sessions(store)).toEqual(['x', 'y', 'z'])
    // The hooks (rollups) saw each call once: the replay inserted nothing.
    expect(hooked).toEqual(['x', 'y', 'z'])
    expect(ledger.status).toMatchObject({ writable: true, pending: 0 })
    await ledger.close()
  })

  it('runs a batch that lost a deadlock again at once, without counting PostgreSQL as away', async () => {
    const { store, dir } = fresh()
    const ledger = ledgerOn(store, dir)
    let losses = 2
    const hooked: string[] = []
    ledger.onBatchTx(async (tx, rows) => {
      // The hook's own writes run in the batch's transaction; a deadlock rolls back both.
      await tx.run('CREATE TABLE IF NOT EXISTS side (session TEXT NOT NULL)')
      for (const r of rows) await tx.run('INSERT INTO side (session) VALUES (@s)', { s: r.session })
      if (losses-- > 0) throw Object.assign(new Error('deadlock detected'), { code: '40P01' })
      for (const r of rows) hooked.push(r.session)
    })
    ledger.record(call({ session: 'd1' }))
    ledger.record(call({ session: 'd2' }))
    expect(await ledger.flushed()).toBe(true)
    expect(ledger.status).toMatchObject({ writable: true, pending: 0, last_error: null })
    expect(await sessions(store)).toEqual(['d1', 'd2'])
    expect(hooked).toEqual(['d1', 'd2'])
    expect((await store.all<{ session: string }>('SELECT session FROM side ORDER BY session')).map((r) => r.session)).toEqual(['d1', 'd2'])
    await ledger.close()
  })

  it('writes spill files found at start-up once, removes them, and counts their spend once', async () => {
    const { store, dir } = fresh()
    await migratePostgres(store)
    const today = Date.now()
    // One file with keys (a PostgreSQL instance's) of which one call is already stored, one without (the SQLite ledger's).
    const keyed = [call({ session: 'k1', call_key: 'old.1', cost_usd: 1 }), call({ session: 'k2', call_key: 'old.2', cost_usd: 2 })]
    const first = new PgLedger(store, { flushIntervalMs: 20, maxPending: 100, timezone: 'UTC', dataDir: dir }).start()
    first.record(keyed[0])
    expect(await first.flushed()).toBe(true)
    await first.close()
    writeFileSync(spillFile(dir, 1000), keyed.map((r) => JSON.stringify(r)).join('\n') + '\n')
    writeFileSync(spillFile(dir, 2000), JSON.stringify(call({ session: 'plain', cost_usd: 4, ts: today })) + '\n{"ts": 1, "sess')
    const ledger = ledgerOn(store, dir)
    expect(ledger.storage.spill_files).toBe(2)
    ledger.record(call({ session: 'new', cost_usd: 8 }))
    expect(await ledger.flushed()).toBe(true)
    expect((await sessions(store)).sort()).toEqual(['k1', 'k2', 'new', 'plain'])
    expect(spillFiles(dir)).toEqual([])
    expect(ledger.storage.spill_files).toBe(0)
    // 1 + 2 + 4 stored before the spend was read, 8 recorded meanwhile: each once.
    expect(ledger.spend.key('h1').day).toBe(15)
    await ledger.close()

    // A spill "file" that cannot be read stays for a person to look at; it does not stop the ledger.
    mkdirSync(spillFile(dir, 3000))
    const reading = ledgerOn(store, dir)
    expect(await reading.flushed()).toBe(true)
    expect(reading.storage).toMatchObject({ ready: true, reachable: true, spill_files: 0 })
    await reading.close()
    rmSync(spillFile(dir, 3000), { recursive: true })

    // A restart reads the same spend from PostgreSQL.
    const again = ledgerOn(store, dir)
    expect(await again.flushed()).toBe(true)
    expect(again.spend.key('h1').day).toBe(15)
    await again.close()
  })

  it('while PostgreSQL cannot be reached: holds and spills every call, and a stop leaves them on disk', async () => {
    const dir = h.tempDir('burnrate-pgl-')
    // A port nothing listens on (the cluster's port + 1 is not ours; use a closed one).
    const away = h.store(`postgres://burnrate:hunter2@127.0.0.1:1/none`)
    const ledger = ledgerOn(away, dir, { secret: 'hunter2' })
    for (const s of ['p1', 'p2', 'p3']) ledger.record(call({ session: s }))
    expect(await ledger.flushed()).toBe(false)
    // On disk while still running (a SIGKILL now would keep them).
    const spilled = async () => {
      const files = spillFiles(dir)
      return files.length === 1 && readFileSync(files[0], 'utf8').trim().split('\n').length === 3
    }
    await until('the calls in the spill file', spilled)
    expect(ledger.status).toMatchObject({ writable: false, pending: 3, dropped: 0 })
    expect(ledger.storage).toMatchObject({ reachable: false, ready: false, spilled: 3, spill_files: 1 })
    expect(ledger.storage.last_error).toMatch(/ECONNREFUSED/)
    ledger.record(call({ session: 'p4' }))
    expect(await ledger.close()).toBe(false)
    const lines = spillFiles(dir).flatMap((f) => readFileSync(f, 'utf8').trim().split('\n')).map((l) => JSON.parse(l))
    expect(lines.map((r) => r.session)).toEqual(['p1', 'p2', 'p3', 'p4'])
    expect(new Set(lines.map((r) => r.call_key)).size).toBe(4)
  })

  it('starts spilling when a write hangs (PostgreSQL not answering), and writes once the write returns', async () => {
    const { store, dir } = fresh()
    await migratePostgres(store)
    let release: () => void = () => {}
    let hang = true
    const stuck: SqlStore = Object.assign(Object.create(store), {
      async transaction<T>(fn: (tx: SqlStore) => Promise<T>): Promise<T> {
        if (hang) await new Promise<void>((r) => (release = r))
        return store.transaction(fn)
      },
    })
    const ledger = ledgerOn(stuck, dir, { stallMs: 200 })
    ledger.record(call({ session: 'h1' }))
    await until('the call spilled', () => ledger.storage.spilled >= 1)
    expect(ledger.status.writable).toBe(false)
    expect(ledger.storage.last_error).toMatch(/not answered/)
    hang = false
    release()
    expect(await ledger.flushed()).toBe(true)
    await spillGone(ledger, dir, 'the spill file written and removed')
    expect(await sessions(store)).toEqual(['h1'])
    expect(ledger.status.writable).toBe(true)
    await ledger.close()
  })

  it('calls PostgreSQL is slow to take are on disk meanwhile: a kill loses none, and each is stored once', async () => {
    const { url, store, dir } = fresh()
    const ledger = ledgerOn(store, dir, { stallMs: 120_000 })
    ledger.record(call({ session: 'before' }))
    expect(await ledger.flushed()).toBe(true)
    // Another session holds the calls table: the next batch waits on PostgreSQL, which still answers.
    let release: () => void = () => {}
    let locked: () => void = () => {}
    const isLocked = new Promise<void>((r) => (locked = r))
    const holder = h.store(url).transaction(async (tx) => {
      await tx.run('LOCK TABLE calls IN EXCLUSIVE MODE')
      locked()
      await new Promise<void>((r) => (release = r))
    })
    await isLocked
    // The lock is let go whatever happens here, so a failure does not hold the teardown too.
    const next = h.tempDir('burnrate-pgl-next-')
    try {
      for (const s of ['s1', 's2', 's3']) ledger.record(call({ session: s }))
      const journaled = () => spillFiles(dir).flatMap((f) => readFileSync(f, 'utf8').trim().split('\n')).filter(Boolean)
      await until('the waiting calls in the spill journal', () => journaled().length === 3)
      // The file can be read before the ledger has counted its write (a busy machine): wait for that too.
      await until('the journal counted', () => ledger.storage.spilled === 3 && ledger.storage.spill_files === 1)
      // Not away: PostgreSQL answers; the calls simply waited longer than JOURNAL_AFTER_MS.
      expect(ledger.status.writable).toBe(true)
      expect(ledger.storage).toMatchObject({ reachable: true, ready: true, spilled: 3, spill_files: 1 })
      // A process killed now leaves this file for its next start: a copy of the data folder keeps it.
      for (const f of spillFiles(dir)) writeFileSync(join(next, basename(f)), readFileSync(f))
    } finally {
      release()
    }
    await holder
    expect(await ledger.flushed()).toBe(true)
    await spillGone(ledger, dir, 'the journal removed once its calls are stored')
    expect(ledger.storage).toMatchObject({ spilled: 0, spill_files: 0 })
    // The next start writes the kept file: the calls already stored are not stored twice.
    const again = ledgerOn(store, next)
    expect(await again.flushed()).toBe(true)
    expect(spillFiles(next)).toEqual([])
    expect(await sessions(store)).toEqual(['before', 's1', 's2', 's3'])
    await again.close()
    await ledger.close()
  })

  it('calls recorded while start-up is still preparing PostgreSQL are on disk meanwhile', async () => {
    const { store, dir } = fresh()
    let release: () => void = () => {}
    const ledger = ledgerOn(store, dir, {
      stallMs: 120_000,
      migrate: async (s) => {
        await new Promise<void>((r) => (release = r))
        return migratePostgres(s)
      },
    })
    ledger.record(call({ session: 'early' }))
    await until('the call in the spill journal', () => ledger.storage.spilled === 1 && spillFiles(dir).length === 1)
    expect(ledger.storage.ready).toBe(false)
    release()
    expect(await ledger.flushed()).toBe(true)
    await spillGone(ledger, dir, 'the journal removed once stored')
    expect(await sessions(store)).toEqual(['early'])
    await ledger.close()
  })

  it('a stop does not wait on a write that hangs: its calls go to the spill file', async () => {
    const { store, dir } = fresh()
    await migratePostgres(store)
    let release: () => void = () => {}
    const stuck: SqlStore = Object.assign(Object.create(store), {
      async transaction<T>(fn: (tx: SqlStore) => Promise<T>): Promise<T> {
        await new Promise<void>((r) => (release = r))
        return store.transaction(fn)
      },
    })
    const ledger = ledgerOn(stuck, dir, { stallMs: 60_000, closeWaitMs: 300 })
    ledger.record(call({ session: 'c1' }))
    ledger.flush()
    expect(await ledger.close()).toBe(false)
    const lines = spillFiles(dir).flatMap((f) => readFileSync(f, 'utf8').trim().split('\n')).map((l) => JSON.parse(l))
    expect(lines.map((r) => r.session)).toEqual(['c1'])
    release()
  })

  it('keeps calls that left memory (past max_pending) on disk and writes them all when PostgreSQL returns', async () => {
    const { store, dir, url } = fresh()
    await migratePostgres(store)
    // Reachable through a door the test opens and closes: a store whose queries fail while closed.
    let open = false
    const door: SqlStore = Object.assign(Object.create(store), {
      async transaction<T>(fn: (tx: SqlStore) => Promise<T>): Promise<T> {
        if (!open) throw Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' })
        return store.transaction(fn)
      },
      async all<T>(sql: string, p?: Record<string, unknown>): Promise<T[]> {
        if (!open) throw Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' })
        return store.all<T>(sql, p)
      },
    })
    expect(url).toContain('postgres://')
    const ledger = ledgerOn(door, dir, { maxPending: 100, migrate: async () => {
      if (!open) throw Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' })
    } })
    const waitSpilled = (n: number) => until(`${n} calls spilled`, () => ledger.storage.spilled >= n)
    for (let i = 0; i < 250; i++) {
      ledger.record(call({ session: `m${i}` }))
      if (i % 50 === 49) await waitSpilled(i + 1)
    }
    await waitSpilled(250)
    expect(ledger.status.pending).toBeLessThanOrEqual(100)
    expect(ledger.status.dropped).toBe(0)
    open = true
    expect(await ledger.flushed()).toBe(true)
    await spillGone(ledger, dir, 'the spill file written and removed')
    const got = await sessions(store)
    expect(got).toHaveLength(250)
    expect(new Set(got).size).toBe(250)
    expect(existsSync(dir)).toBe(true)
    await ledger.close()
  })
})
