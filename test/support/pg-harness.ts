import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { afterAll, beforeAll } from 'vitest'
import type { Logger } from '../../src/main/log'
import type { CreateOptions } from '../../src/main/server/server'
import { PostgresStore } from '../../src/main/storage/postgres'
import { eventually } from './http'
import { type MockUpstream, type Responder, startMockUpstream } from './mock-upstream'
import { startPostgres, type TestPostgres } from './postgres'
import type { TestServer } from './server'

/**
 * The set-up of a PostgreSQL test file in one call: `const h = usePostgres()` at the top of the
 * file starts ONE cluster (and a mock upstream) in beforeAll and, in afterAll, stops every server,
 * store and folder the file asked the harness for, then the upstream and the cluster.
 *
 *   const h = usePostgres({ upstream: () => ({ status: 200, body: fixture('…') }) })
 *   it('…', async () => {
 *     const url = h.database()
 *     const [a, b] = [await h.server({ url }), await h.server({ url })]   // two instances, one database
 *     const store = h.store(url)                                          // to look at what they stored
 *   })
 */
export interface PgHarness {
  /** The cluster (after beforeAll): `createDatabase`, `stopServer`/`startServer` to take PostgreSQL away. */
  readonly pg: TestPostgres
  /** The mock provider every server's providers point at (after beforeAll; absent with `upstream: false`). */
  readonly upstream: MockUpstream
  /** A new empty database in the cluster, and its URL. */
  database(): string
  /** A store on `url` for the test to read or write the database with; closed at teardown. */
  store(url: string): PostgresStore
  /**
   * A Burnrate (startTestServer) with `storage.url` = `url` (a new database when left out; `null`
   * for a server on its own SQLite ledger), `config` merged in, providers at the mock upstream
   * (or `upstream`), in a new data folder (or `dir`, e.g. to restart on another's data). Stopped
   * and its folder removed at teardown.
   */
  server(opts?: ServerOptions): Promise<TestServer>
  /** A new temp folder, removed at teardown. */
  tempDir(prefix?: string): string
  /** Runs `fn` at teardown (before the servers, stores and cluster stop; the latest first). */
  onTeardown(fn: () => unknown): void
}

export interface ServerOptions {
  url?: string | null
  config?: Record<string, any>
  dir?: string
  /** Another upstream for the providers; `null`: the config's own base URLs (or the real ones). */
  upstream?: string | null
  log?: Logger
  /** The server's creation options (../../src/main/server/server.ts CreateOptions). */
  create?: Omit<CreateOptions, 'log'>
}

export interface HarnessOptions {
  /** The mock upstream's responder (its default answers `{}`), or false for no mock upstream. */
  upstream?: Responder | false
  /** The limit of beforeAll (starting the cluster on a busy machine). */
  timeoutMs?: number
}

export function usePostgres(opts: HarnessOptions = {}): PgHarness {
  let pg: TestPostgres | null = null
  let upstream: MockUpstream | null = null
  const teardown: (() => unknown)[] = []
  const servers: TestServer[] = []
  const stores: PostgresStore[] = []
  const dirs: string[] = []

  beforeAll(async () => {
    pg = await startPostgres()
    if (opts.upstream !== false) upstream = await startMockUpstream(opts.upstream || undefined)
  }, opts.timeoutMs ?? 120_000)

  afterAll(async () => {
    for (const f of teardown.reverse()) await Promise.resolve(f()).catch(() => {})
    for (const t of servers.reverse()) await t.cleanup().catch(() => {})
    for (const s of stores) await s.close().catch(() => {})
    await upstream?.close()
    pg?.stop()
    for (const d of dirs) rmSync(d, { recursive: true, force: true })
  })

  const started = () => {
    if (!pg) throw new Error('usePostgres(): the cluster starts in beforeAll; use the harness inside tests and hooks')
    return pg
  }

  return {
    get pg() {
      return started()
    },
    get upstream() {
      if (!upstream) throw new Error('usePostgres(): no mock upstream (started in beforeAll unless upstream: false)')
      return upstream
    },
    database: () => started().createDatabase(),
    store(url) {
      const s = new PostgresStore(url)
      stores.push(s)
      return s
    },
    async server(o = {}) {
      const url = o.url === undefined ? started().createDatabase() : o.url
      const config = { ...o.config }
      // Admissions wait for PostgreSQL as long as a test on a busy machine may make them (the
      // 3 s default would decide a slow one in process: exact admission across instances is
      // what most of these tests check). A test of that wait sets its own.
      if (url !== null) config.storage = { budget_wait_ms: 30_000, ...config.storage, url }
      const up = o.upstream === undefined ? (upstream?.url ?? undefined) : (o.upstream ?? undefined)
      // Loaded here: a unit test of a storage part (no server) does not load the whole server.
      const { startTestServer } = await import('./server')
      const t = await startTestServer(config, up, o.dir, { log: o.log, create: o.create })
      servers.push(t)
      return t
    },
    tempDir(prefix = 'burnrate-pg-test-') {
      const d = mkdtempSync(join(tmpdir(), prefix))
      dirs.push(d)
      return d
    },
    onTeardown(fn) {
      teardown.push(fn)
    },
  }
}

/** Polls until `fn` holds; on failure the error names what was awaited (PostgreSQL is polled, never slept on). */
export async function until(what: string, fn: () => boolean | Promise<boolean>, timeoutMs = 60_000): Promise<void> {
  await eventually(async () => {
    if (!(await fn())) throw new Error(`still waiting: ${what}`)
    return true
  }, timeoutMs)
}

/** One value (the first column of the first row) of `sql` in a server's own SQLite file, opened read-only. */
export function localValue(file: string, sql: string): unknown {
  const db = new Database(file, { readonly: true })
  try {
    return db.prepare(sql).pluck().get()
  } finally {
    db.close()
  }
}

/** Every row of `sql` in a server's own SQLite file, opened read-only. */
export function localRows<T = any>(file: string, sql: string): T[] {
  const db = new Database(file, { readonly: true })
  try {
    return db.prepare(sql).all() as T[]
  } finally {
    db.close()
  }
}

/** The calls in `store` per session (`{ session: count }`). */
export async function sessionCounts(store: PostgresStore): Promise<Record<string, number>> {
  const rows = await store.all<{ session: string; n: number }>('SELECT session, COUNT(*) AS n FROM calls GROUP BY session ORDER BY session')
  return Object.fromEntries(rows.map((r) => [r.session, r.n]))
}

/** A free port on 127.0.0.1 (for a server that must keep its port across a restart). */
export { freePort } from './postgres'

/**
 * Holds the rows `sql` selects FOR UPDATE in a transaction of its own, as another instance's
 * admission would, until `release`: an admission that needs them waits meanwhile (`lockWaiter`).
 */
export function holdRows(store: PostgresStore, sql: string, params: Record<string, unknown>): Promise<{ release: () => Promise<void> }> {
  return holdLock(store, `${sql} FOR UPDATE`, params)
}

/** Runs `sql` (a statement that takes locks: `LOCK TABLE …`, `SELECT … FOR UPDATE`) in a transaction of its own, held until `release`. */
export async function holdLock(store: PostgresStore, sql: string, params: Record<string, unknown> = {}): Promise<{ release: () => Promise<void> }> {
  let release!: () => void
  const released = new Promise<void>((r) => (release = r))
  let locked!: () => void
  const isLocked = new Promise<void>((r) => (locked = r))
  const done = store.transaction(async (tx) => {
    await tx.run(sql, params)
    locked()
    await released
  })
  await Promise.race([isLocked, done])
  return {
    release: async () => {
      release()
      await done
    },
  }
}

/** Resolves once a session of the database waits on a lock (an admission queued behind `holdRows`). */
export async function lockWaiter(store: PostgresStore, timeoutMs?: number): Promise<void> {
  await lockWaiters(store, 1, timeoutMs)
}

/** Resolves once at least `n` sessions of the database wait on a lock (queued behind `holdRows`, in the order they came). */
export async function lockWaiters(store: PostgresStore, n: number, timeoutMs?: number): Promise<void> {
  await until(`${n} session(s) waiting on a lock`, async () => {
    const waiting = await store.all("SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()")
    return waiting.length >= n
  }, timeoutMs)
}
