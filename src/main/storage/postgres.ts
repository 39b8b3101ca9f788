import { createRequire } from 'node:module'
import type pg from 'pg'
import { type SqlParams, type SqlReader, type SqlStore, toPositional } from './sql'

// int8 (counts, SUM of integers, bigint timestamps) and numeric (SUM of bigint) as numbers: every
// such value Burnrate stores is far below 2^53. float8 already comes back as a number.
const INT8 = 20
const NUMERIC = 1700

/**
 * The driver, loaded when the first PostgreSQL store is made: an instance on its SQLite file
 * never loads it (start-up and memory at rest pay only for what is used).
 */
let driver: typeof pg | null = null
function loadDriver(): typeof pg {
  driver ??= createRequire(import.meta.url)('pg') as typeof pg
  return driver
}

function typesOf(lib: typeof pg) {
  return {
    getTypeParser(oid: number, format?: string) {
      if (oid === INT8 || oid === NUMERIC) return (v: string) => (v === null ? null : Number(v))
      return lib.types.getTypeParser(oid, format as 'text')
    },
  }
}

type Runner = Pick<pg.Pool | pg.PoolClient, 'query'>

const translated = new Map<string, { text: string; names: string[] }>()
function positional(sql: string) {
  let t = translated.get(sql)
  if (!t) {
    t = toPositional(sql)
    translated.set(sql, t)
  }
  return t
}

async function query(runner: Runner, sql: string, params?: SqlParams): Promise<pg.QueryResult> {
  const { text, names } = positional(sql)
  const values = names.map((n) => {
    const v = params?.[n]
    return v === undefined ? null : v
  })
  return runner.query({ text, values })
}

class Scope implements SqlStore {
  readonly dialect = 'postgres' as const
  constructor(protected readonly runner: Runner) {}
  async all<T>(sql: string, params?: SqlParams): Promise<T[]> {
    return (await query(this.runner, sql, params)).rows as T[]
  }
  async get<T>(sql: string, params?: SqlParams): Promise<T | undefined> {
    return (await query(this.runner, sql, params)).rows[0] as T | undefined
  }
  async run(sql: string, params?: SqlParams): Promise<number> {
    return (await query(this.runner, sql, params)).rowCount ?? 0
  }
  async transaction<T>(fn: (tx: SqlStore) => Promise<T>): Promise<T> {
    return fn(this) // already inside one
  }
  async close(): Promise<void> {}
}

/** The SQL seam over a PostgreSQL pool (`storage.url`). */
export class PostgresStore extends Scope {
  readonly pool: pg.Pool

  constructor(url: string, opts: { max?: number; applicationName?: string; queryTimeoutMs?: number } = {}) {
    const lib = loadDriver()
    const pool = new lib.Pool({
      connectionString: url,
      max: opts.max ?? 10,
      application_name: opts.applicationName ?? 'burnrate',
      connectionTimeoutMillis: 5000,
      idleTimeoutMillis: 30_000,
      // A network that drops silently must not hold a query forever: TCP keepalive finds a dead
      // peer, and no statement Burnrate sends runs anywhere near a minute (the ledger spills
      // after 10 s of silence; this frees the connection for when PostgreSQL is back).
      keepAlive: true,
      keepAliveInitialDelayMillis: 10_000,
      query_timeout: opts.queryTimeoutMs ?? 60_000,
      types: typesOf(lib),
    })
    // An idle client's error (the server restarted) must not crash the process; the next query reconnects.
    pool.on('error', () => {})
    // Nor one that comes between a client's checkout and its user's own listener: PostgreSQL
    // shutting down sends its FATAL in the same read as a new connection's first ready message,
    // before the code that asked for the client runs again. Queries on it fail as always.
    pool.on('connect', (client) => client.on('error', () => {}))
    super(pool)
    this.pool = pool
    this.snapshotLimit = Math.max(1, Math.floor((opts.max ?? 10) / 4))
  }

  override async transaction<T>(fn: (tx: SqlStore) => Promise<T>): Promise<T> {
    return this.held('BEGIN', fn)
  }

  /**
   * How many readSnapshot calls may hold a connection at once: a quarter of the pool, at least
   * one, so however many exports run the ledger's writes and the budgets keep the rest.
   */
  readonly snapshotLimit: number
  private snapshots = 0

  /**
   * Runs `fn` on one connection in one REPEATABLE READ, READ ONLY transaction (as pg_dump reads):
   * every statement `fn` sends sees the database as it stood at the first one, whatever other
   * transactions commit meanwhile, and writers are never held up (it takes no lock they wait
   * for). The snapshot is taken before `fn` runs. The connection goes back to the pool when `fn`
   * settles, however it ends. Throws SnapshotsBusy, at once and before taking a connection, when
   * `snapshotLimit` of them are running.
   */
  async readSnapshot<T>(fn: (q: SqlReader) => Promise<T>): Promise<T> {
    if (this.snapshots >= this.snapshotLimit) throw new SnapshotsBusy(this.snapshotLimit)
    this.snapshots++
    try {
      return await this.held('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY', async (tx) => {
        // A REPEATABLE READ transaction's snapshot is taken at its first statement, not at BEGIN.
        await tx.get('SELECT 1')
        return fn(tx)
      })
    } finally {
      this.snapshots--
    }
  }

  /** Runs `fn` in a transaction opened by `begin`, on one client of the pool, always released. */
  private async held<T>(begin: string, fn: (tx: SqlStore) => Promise<T>): Promise<T> {
    const client = await this.pool.connect()
    // A checked-out client has no listener of the pool's: a connection lost while it is held
    // (PostgreSQL restarted, the backend terminated) emits 'error' on it, which unheard would be
    // an uncaught exception and end the process. Heard here, the transaction's next query fails
    // instead, and the broken client is destroyed on release rather than pooled.
    let lost: Error | undefined
    const onError = (err: Error): void => {
      lost = err
    }
    client.on('error', onError)
    try {
      await client.query(begin)
      const out = await fn(new Scope(client))
      await client.query('COMMIT')
      return out
    } catch (err) {
      // A ROLLBACK that fails (it timed out queued behind a statement still running: a lock held
      // past the query timeout) leaves the transaction open: the connection is destroyed, which
      // rolls it back, never pooled, where the next BEGIN would join it and COMMIT its rows
      // without the batch hooks that count them (budgets, rollups).
      if (!lost) await client.query('ROLLBACK').catch((e: Error) => (lost = e))
      throw err
    } finally {
      client.off('error', onError)
      client.release(lost)
    }
  }

  /**
   * Ends the pool, waiting `waitMs` at most for queries still running: a statement PostgreSQL
   * does not answer (a lock held elsewhere, a network that dropped) would hold the stop until
   * its query timeout (a minute). Past that their connections are cut; their work is the
   * callers' to keep (the ledger has spilled what it had not stored).
   */
  override async close(waitMs = CLOSE_WAIT_MS): Promise<void> {
    const ended = this.pool.end()
    if (await settlesWithin(ended, waitMs)) return
    // pg has no public way to end a pool's busy clients: their sockets are destroyed, which fails their queries.
    const clients = (this.pool as unknown as { _clients?: { connection?: { stream?: { destroy(): void } } }[] })._clients ?? []
    for (const c of clients) c.connection?.stream?.destroy()
    await settlesWithin(ended, waitMs)
  }
}

/** readSnapshot refused: `limit` of them already hold a connection. */
export class SnapshotsBusy extends Error {
  constructor(readonly limit: number) {
    super(`${limit} long reads (exports) already hold a database connection`)
  }
}

/** How long closing the pool waits for queries still running (PostgresStore.close). */
const CLOSE_WAIT_MS = 2_000

/** True when `p` settles within `ms` (never rejects). */
async function settlesWithin(p: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<false>((r) => {
    timer = setTimeout(() => r(false), ms)
  })
  try {
    return await Promise.race([p.then(() => true, () => true), late])
  } finally {
    clearTimeout(timer)
  }
}
