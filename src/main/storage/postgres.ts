import { createRequire } from 'node:module'
import type pg from 'pg'
import { type SqlParams, type SqlStore, toPositional } from './sql'

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
  }

  override async transaction<T>(fn: (tx: SqlStore) => Promise<T>): Promise<T> {
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
      await client.query('BEGIN')
      const out = await fn(new Scope(client))
      await client.query('COMMIT')
      return out
    } catch (err) {
      if (!lost) await client.query('ROLLBACK').catch(() => {})
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
