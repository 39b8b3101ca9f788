import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { budgetsOf } from '../../src/main/budgets'
import { describe, expect, it } from 'vitest'
import { loadConfig } from '../../src/main/config/load'
import { createLogger } from '../../src/main/log'
import { spillFiles } from '../../src/main/reliability/spill'
import { createBurnrate } from '../../src/main/server/server'
import type { PostgresStore } from '../../src/main/storage/postgres'
import { PG_MIGRATIONS } from '../../src/main/storage/postgres-migrations'
import { startBuiltServer } from '../load/harness'
import { fixture } from '../support/fixtures'
import { eventually, postJson, request } from '../support/http'
import { localRows, localValue, sessionCounts, until, usePostgres } from '../support/pg-harness'
import type { TestServer } from '../support/server'

/**
 * A server with `storage.url` records its proxied calls in PostgreSQL: exactly as the SQLite
 * ledger records them, from several instances into one database, and without losing or
 * doubling a call while PostgreSQL is stopped, or when an instance is killed meanwhile.
 */

const h = usePostgres({
  upstream: () => ({ status: 200, headers: { 'content-type': 'application/json' }, body: fixture('openai-chat/chat-nonstream-cached.json') }),
})

/** A new database, its URL (with a password, which trust auth ignores: it must show up nowhere) and a store to read it. */
function database(): { url: string; store: PostgresStore } {
  const url = h.database().replace('postgres://burnrate@', 'postgres://burnrate:TOPSECRETPW@')
  return { url, store: h.store(url) }
}

const server = (config: Record<string, any>): Promise<TestServer> => h.server({ url: null, config })

const KEY = 'sk-pg-ledger-KEYSECRET-0000000001'
function call(url: string, session: string) {
  return postJson(`${url}/v1/chat/completions`, { model: 'gpt-4o-mini', messages: [] }, { authorization: `Bearer ${KEY}`, 'x-burnrate-session': session })
}

describe('a server with storage.url', () => {
  it('records proxied calls in PostgreSQL, field for field as the SQLite ledger does, and keeps the password out of health', async () => {
    const { url, store } = database()
    const onPg = await server({ storage: { url } })
    const onLite = await server({})
    for (const t of [onPg, onLite]) expect((await call(t.url, 'same')).status).toBe(200)
    expect(await onPg.server.ledger.flushed()).toBe(true)
    await onLite.server.proxy.drain(2000)
    expect(await onLite.server.ledger.flushed()).toBe(true)

    const [pgRow] = await store.all<Record<string, any>>('SELECT * FROM calls')
    const liteRow = localRows<Record<string, any>>(onLite.dbFile, 'SELECT * FROM calls')[0]
    // The recorded payload's tokens (test/fixtures/README.md) and its price, never rounded.
    expect(pgRow).toMatchObject({ provider: 'openai', session: 'same', status: 200, input_tokens: 1149, cache_read_tokens: 1024, output_tokens: 353, priced: 1 })
    expect(pgRow.cost_usd).toBeGreaterThan(0)
    expect(pgRow.call_key).toMatch(/^[0-9a-z]+\.[0-9a-z]+$/)
    const same = (r: Record<string, any>) => {
      const { id: _id, ts: _ts, latency_ms: _l, call_key: _k, ...rest } = r
      return rest
    }
    expect(same(pgRow)).toEqual(same(liteRow))
    // The instance's own SQLite file holds no calls: the ledger is in PostgreSQL.
    expect(localValue(onPg.dbFile, 'SELECT COUNT(*) AS n FROM calls')).toBe(0)
    // The spend is the ledger's.
    expect(onPg.server.ledger.spend.totals().day).toBe(pgRow.cost_usd)

    // On a loaded machine a write slower than JOURNAL_AFTER_MS journals the call too; the journal
    // goes just after the write that stored it (flushed() answers at the write), so wait for it.
    await eventually(async () => {
      expect((await request(`${onPg.url}/api/health`)).json()).toMatchObject({
        status: 'ok',
        ledger: { writable: true, pending: 0, dropped: 0 },
        storage: { kind: 'postgres', reachable: true, ready: true, spilled: 0, spill_files: 0 },
      })
      return true
    })
    const health = await request(`${onPg.url}/api/health`)
    expect(health.json().storage.url).toMatch(/^postgres:\/\/burnrate:\*\*\*@127\.0\.0\.1:\d+\/t/)
    expect(health.text).not.toContain('TOPSECRETPW')
  })

  it('holds and spills calls while PostgreSQL is stopped, answers every call, and writes each once when it returns', async () => {
    const { url, store } = database()
    const t = await server({ storage: { url } })
    expect((await call(t.url, 'before')).status).toBe(200)
    await until('the first call in PostgreSQL', async () => (await sessionCounts(store)).before === 1)
    const started = t.server.ledger.spend.totals().day

    h.pg.stopServer()
    try {
      for (const s of ['away1', 'away2', 'away3']) expect((await call(t.url, s)).status).toBe(200)
      // On disk while the server runs (a kill now would keep them), in the spill format, without keys.
      await until('three calls in the spill file', () => {
        const files = spillFiles(t.dir)
        return files.length === 1 && readFileSync(files[0], 'utf8').trim().split('\n').length === 3
      })
      const text = readFileSync(spillFiles(t.dir)[0], 'utf8')
      expect(text.trim().split('\n').map((l) => JSON.parse(l).session)).toEqual(['away1', 'away2', 'away3'])
      expect(text).not.toContain('KEYSECRET')
      const health = await request(`${t.url}/api/health`)
      expect(health.json()).toMatchObject({ status: 'degraded', ledger: { writable: false, pending: 3, dropped: 0 }, storage: { reachable: false, spilled: 3, spill_files: 1 } })
      expect(health.text).not.toContain('TOPSECRETPW')
      // Spend counts the calls at once, database or not.
      expect(t.server.ledger.spend.totals().day).toBeCloseTo(started * 4, 12)
    } finally {
      h.pg.startServer()
    }
    await until('the spill file written and removed', async () => spillFiles(t.dir).length === 0 && (await sessionCounts(store)).away3 === 1, 90_000)
    expect(await sessionCounts(store)).toEqual({ before: 1, away1: 1, away2: 1, away3: 1 })
    expect((await request(`${t.url}/api/health`)).json()).toMatchObject({ status: 'ok', ledger: { writable: true, pending: 0 }, storage: { reachable: true, spilled: 0, spill_files: 0 } })
    expect((await call(t.url, 'after')).status).toBe(200)
    expect(await t.server.ledger.flushed()).toBe(true)
    expect(await sessionCounts(store)).toEqual({ before: 1, away1: 1, away2: 1, away3: 1, after: 1 })
  })

  it('starts while PostgreSQL is stopped, meters calls meanwhile, and writes them (spend counted once) when it is up', async () => {
    const { url, store } = database()
    h.pg.stopServer()
    let t: TestServer
    try {
      t = await server({ storage: { url } })
      expect((await call(t.url, 'early')).status).toBe(200)
      await until('the call in the spill file', () => spillFiles(t.dir).length === 1 && readFileSync(spillFiles(t.dir)[0], 'utf8').includes('"early"'))
      expect((await request(`${t.url}/api/health`)).json()).toMatchObject({ status: 'degraded', storage: { reachable: false, ready: false, spilled: 1 } })
    } finally {
      h.pg.startServer()
    }
    await until('the call written and the spill removed', async () => spillFiles(t.dir).length === 0 && (await sessionCounts(store)).early === 1, 90_000)
    expect((await request(`${t.url}/api/health`)).json()).toMatchObject({ status: 'ok', storage: { reachable: true, ready: true, spilled: 0 } })
    const stored = await store.get<{ usd: number }>('SELECT SUM(cost_usd) AS usd FROM calls')
    expect(stored!.usd).toBeGreaterThan(0)
    expect(t.server.ledger.spend.totals().day).toBe(stored!.usd)
    // The budgets' calls feed, which could neither listen nor read while PostgreSQL was away, does both now.
    const feed = budgetsOf(t.server.context).feed!
    await until('the calls feed listens', () => feed.status().listening && feed.status().reads > 0, 30_000)
  })

  it('a database a newer Burnrate has upgraded: answers every call, says why it writes none (PostgreSQL answers), and writes them once it may', async () => {
    const { url, store } = database()
    await store.run('CREATE TABLE burnrate_schema (version INTEGER NOT NULL)')
    await store.run('INSERT INTO burnrate_schema (version) VALUES (99)')
    const errors: string[] = []
    const base = createLogger('error')
    const log = { ...base, error: (m: string) => errors.push(m) }
    const t = await h.server({ url, log })
    for (const s of ['newer1', 'newer2']) expect((await call(t.url, s)).status).toBe(200)
    await until('both calls in the spill file', () => spillFiles(t.dir).length === 1 && readFileSync(spillFiles(t.dir)[0], 'utf8').trim().split('\n').length === 2)
    const health = await request(`${t.url}/api/health`)
    expect(health.json()).toMatchObject({ status: 'degraded', ledger: { writable: false }, storage: { reachable: true, ready: false, spilled: 2 } })
    expect(health.json().storage.last_error).toContain('newer than this Burnrate knows')
    expect(health.text).not.toContain('TOPSECRETPW')
    // Said once, however often the writer tries again.
    await until('the writer has tried once', () => t.server.ledger.status.last_error !== null)
    // flushed() starts a pass of the writer and says false once it has failed: two more tries, whose errors are in by then.
    expect(await t.server.ledger.flushed()).toBe(false)
    expect(await t.server.ledger.flushed()).toBe(false)
    expect(errors.filter((m) => m.includes('newer than this Burnrate knows'))).toHaveLength(1)
    // The newer Burnrate is rolled back (or this one upgraded): the calls are written, once each.
    await store.run('DELETE FROM burnrate_schema')
    await until('the spilled calls written', async () => spillFiles(t.dir).length === 0 && (await sessionCounts(store)).newer2 === 1, 90_000)
    expect(await sessionCounts(store)).toEqual({ newer1: 1, newer2: 1 })
    expect((await request(`${t.url}/api/health`)).json()).toMatchObject({ status: 'ok', storage: { reachable: true, ready: true } })
  })

  it('never writes the password to its log (start-up, PostgreSQL away, stop)', async () => {
    const lines: string[] = []
    const dir = mkdtempSync(join(tmpdir(), 'burnrate-pglog-'))
    const config = loadConfig({ dataDir: dir }, { BURNRATE_DATABASE_URL: 'postgres://burnrate:LOGSECRETPW@127.0.0.1:1/burnrate' })
    const b = createBurnrate({ ...config, server: { ...config.server, port: 0 } }, { log: createLogger('debug', (l) => lines.push(l)) })
    try {
      await b.listen()
      await until('the log saying PostgreSQL cannot be written', () => lines.some((l) => /cannot be written \(ECONNREFUSED/.test(l)))
      expect(lines.join('')).toContain('postgres://burnrate:***@127.0.0.1:1/burnrate')
    } finally {
      await b.close(0)
      rmSync(dir, { recursive: true, force: true })
    }
    expect(lines.join('')).not.toContain('LOGSECRETPW')
  })

  it('two servers on one database both record into it', async () => {
    const { url, store } = database()
    const [a, b] = await Promise.all([server({ storage: { url } }), server({ storage: { url } })])
    await Promise.all(['a1', 'a2', 'a3'].map((s) => call(a.url, s)).concat(['b1', 'b2'].map((s) => call(b.url, s))))
    expect(await a.server.ledger.flushed()).toBe(true)
    expect(await b.server.ledger.flushed()).toBe(true)
    expect(await sessionCounts(store)).toEqual({ a1: 1, a2: 1, a3: 1, b1: 1, b2: 1 })
    const schema = await store.all<{ version: number }>('SELECT version FROM burnrate_schema ORDER BY version')
    expect(schema.map((r) => r.version)).toEqual(PG_MIGRATIONS.map((m) => m.version))
    // A third instance starting later loads the spend both recorded.
    const c = await server({ storage: { url } })
    expect(await c.server.ledger.flushed()).toBe(true)
    const stored = await store.get<{ usd: number }>('SELECT SUM(cost_usd) AS usd FROM calls')
    expect(c.server.ledger.spend.totals().day).toBeCloseTo(stored!.usd, 12)
  })

  it('one of two instances killed mid-load: every call the other answered is kept, and the killed one restarts counting nothing twice', async () => {
    const { url, store } = database()
    const [a, b] = await Promise.all([startBuiltServer({ storage: { url } }, h.upstream.url), startBuiltServer({ storage: { url } }, h.upstream.url)])
    let again: Awaited<ReturnType<typeof startBuiltServer>> | null = null
    try {
      const done: string[] = []
      let stopA = false
      let stopB = false
      let n = 0
      // Four callers per instance, each sending one call after the other until told to stop.
      const worker = async (base: string, prefix: string, more: () => boolean) => {
        while (more()) {
          const session = `${prefix}${n++}`
          try {
            if ((await call(base, session)).status === 200) done.push(session)
          } catch {
            // the killed instance's callers fail from then on
          }
        }
      }
      const aDone = () => done.filter((s) => s.startsWith('a-')).length
      const bDone = () => done.filter((s) => s.startsWith('b-')).length
      const loadA = Array.from({ length: 4 }, () => worker(a.url, 'a-', () => !stopA))
      const loadB = Array.from({ length: 4 }, () => worker(b.url, 'b-', () => !stopB))
      await until('calls answered by both', () => aDone() >= 40 && bDone() >= 40)
      // The calls A has answered so far, then one more call A answers after all of them (its callers
      // go on meanwhile). A's ledger writes its calls in the order they ended, one batch after the
      // other: once that later call is in PostgreSQL, every call answered before it was written
      // too (unless it was lost). The kill comes after that, still mid-load: the killed instance
      // loses at most what ended within its last flush interval (as with SQLite), never these.
      const settledByA = done.filter((s) => s.startsWith('a-'))
      expect((await call(a.url, 'mark-a')).status).toBe(200)
      await until('a call A answered after them in PostgreSQL', async () => (await sessionCounts(store))['mark-a'] === 1)
      await a.kill('SIGKILL')
      stopA = true
      await Promise.all(loadA)
      const afterKill = bDone()
      await until('the other instance still answering', () => bDone() >= afterKill + 40)
      stopB = true
      await Promise.all(loadB)

      const answeredByB = done.filter((s) => s.startsWith('b-'))
      await until('every call the surviving instance answered in PostgreSQL', async () => {
        const counts = await sessionCounts(store)
        return answeredByB.every((s) => counts[s] === 1)
      })
      // Every call A had answered before that later call: in PostgreSQL, once each, after the kill.
      const counts = await sessionCounts(store)
      expect(settledByA.length).toBeGreaterThanOrEqual(40)
      expect(settledByA.filter((s) => counts[s] !== 1)).toEqual([])

      again = await startBuiltServer({ storage: { url } }, h.upstream.url, a.dataDir)
      expect((await call(again.url, 'after-restart')).status).toBe(200)
      await until('the restarted instance recording', async () => (await sessionCounts(store))['after-restart'] === 1)
      expect(Object.values(await sessionCounts(store)).every((c) => c === 1)).toBe(true)
    } finally {
      await again?.stop()
      await b.stop()
      await a.dispose()
      await b.dispose()
    }
  })

  it('an instance killed while PostgreSQL is away writes its spill at its restart, once', async () => {
    const { url, store } = database()
    const first = await startBuiltServer({ storage: { url } }, h.upstream.url)
    let again: Awaited<ReturnType<typeof startBuiltServer>> | null = null
    try {
      expect((await call(first.url, 'k0')).status).toBe(200)
      await until('the first call in PostgreSQL', async () => (await sessionCounts(store)).k0 === 1)
      h.pg.stopServer()
      try {
        for (const s of ['k1', 'k2', 'k3']) expect((await call(first.url, s)).status).toBe(200)
        await until('three calls in the spill file', () => {
          const files = spillFiles(first.dataDir)
          return files.length === 1 && readFileSync(files[0], 'utf8').trim().split('\n').length === 3
        })
        await first.kill('SIGKILL')
      } finally {
        h.pg.startServer()
      }
      expect(spillFiles(first.dataDir)).toHaveLength(1)
      again = await startBuiltServer({ storage: { url } }, h.upstream.url, first.dataDir)
      await until('the spill written and removed', async () => spillFiles(first.dataDir).length === 0 && (await sessionCounts(store)).k3 === 1, 90_000)
      expect(await sessionCounts(store)).toEqual({ k0: 1, k1: 1, k2: 1, k3: 1 })
    } finally {
      await again?.stop()
      await first.dispose()
    }
  })
})
