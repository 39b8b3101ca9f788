import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { type Command, InvalidArgumentError } from 'commander'
import type Database from 'better-sqlite3'
import { ConfigError, loadConfig } from '../config/load'
import { DB_FILE } from '../config/paths'
import type { Config } from '../config/schema'
import { dataDirHolder, dataDirServer } from '../server/data-lock'
import type { SqlStore } from '../storage/sql'
import { CliError, EXIT, type CliContext } from './context'

/** Options every command that reads spend takes. */
export interface TargetOptions {
  config?: string
  dataDir?: string
  url?: string
  token?: string
  local?: boolean
}

export function withTarget(cmd: Command): Command {
  return cmd
    .option('--config <file>', 'config file (default: <data dir>/config.yaml)', pathOption)
    .option('--data-dir <dir>', 'folder of the ledger (default: the OS app-data folder)', pathOption)
    .option('--url <url>', 'a running Burnrate (default: the one serving the data folder, named by its server.lock)', urlOption)
    .option('--token <token>', 'its dashboard token (default: BURNRATE_TOKEN, else dashboard.token)')
    .option('--local', 'read the ledger file even when a server is running')
}

/** Where the numbers come from: a running server over HTTP, or the ledger file itself. */
export type Target =
  | {
      kind: 'http'
      config: Config
      url: string
      get: (path: string, opts?: { stream?: boolean }) => Promise<Response>
      /** Its /api/health answer, read to find it (`status` shows it: not asked again). */
      health: { status: string; ledger?: Record<string, unknown> }
    }
  | { kind: 'local'; config: Config; open: () => Database.Database }

export function configOf(o: TargetOptions): Config {
  try {
    return loadConfig({ config: o.config, dataDir: o.dataDir })
  } catch (err) {
    // BURNRATE_PORT=abc is bad usage (2); a config file refused, a failure (1).
    if (err instanceof ConfigError) throw new CliError(err.message, err.usage ? EXIT.usage : EXIT.failed)
    throw err
  }
}

/**
 * Finds a running Burnrate (GET /api/health: within a second for the one serving the data folder,
 * else the file is read; within 10 s at `--url`, a server that may be across a network or busy,
 * with nothing to fall back to), else the ledger file: the one at
 * `--url`, else the one that serves the data folder (its server.lock names it and the address it
 * listens on). Never whatever answers on the configured port: while Burnrate is stopped anyone
 * may listen there (another user of the machine), and it would be handed the dashboard token and
 * could show any numbers.
 */
export async function resolveTarget(o: TargetOptions, ctx: CliContext): Promise<Target> {
  const t = await findTarget(o, ctx)
  if (t.kind === 'local') checkNamedDataDir(t.config)
  return t
}

/**
 * A data folder named (`--data-dir`, BURNRATE_DATA_DIR, a config's `data_dir`) that does not
 * exist, or exists but holds no ledger (`--data-dir /tmp`, the parent of the right folder), is a
 * mistake to a reader: `status`, `report` and `export` made an empty ledger there and reported
 * its $0.00, leaving it behind. Refused as a bad value (exit 2) before anything is made. The
 * default folder is made on a fresh install (report imports the agents' logs into it), `import`
 * makes the ledger it writes, and with `storage.url` the calls are in PostgreSQL.
 */
function checkNamedDataDir(config: Config): void {
  if (!config.data_dir_named_by || config.storage.url) return
  if (!existsSync(config.data_dir)) {
    throw new CliError(
      `no data folder ${config.data_dir} (named by ${config.data_dir_named_by}); check the path, or run burnrate import to start a ledger there`,
      EXIT.usage,
    )
  }
  if (existsSync(join(config.data_dir, DB_FILE))) return
  throw new CliError(
    `no ledger in ${config.data_dir} (named by ${config.data_dir_named_by}: it has no ${DB_FILE}); check the path, or run burnrate import to start a ledger there`,
    EXIT.usage,
  )
}

async function findTarget(o: TargetOptions, ctx: CliContext): Promise<Target> {
  const config = configOf(o)
  const local: Target = { kind: 'local', config, open: () => openLedgerFile(config) }
  if (o.local) return local
  const named = o.url ?? dataDirServer(config.data_dir)?.url
  if (named === undefined) return local
  const url = named.replace(/\/+$/, '')
  const token = o.token ?? (ctx.env.BURNRATE_TOKEN || config.dashboard.token)
  const headers: Record<string, string> = token ? { authorization: `Bearer ${token}` } : {}
  // 30 s for an answer. A stream (an export) has them for its headers only: its body takes as
  // long as the calls and the reader take (`| less` holds it while someone reads), and a timer
  // on the whole fetch cut every export longer than 30 s with exit 1.
  // A request that fails names the server and why (fetch's own words are 'fetch failed').
  const get = async (path: string, opts: { stream?: boolean } = {}) => {
    const ac = opts.stream ? new AbortController() : null
    const timer = ac && setTimeout(() => ac.abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError')), 30_000)
    try {
      return await fetch(url + path, { headers, signal: ac?.signal ?? AbortSignal.timeout(30_000) })
    } catch (err) {
      throw new CliError(`${url}${path.split('?')[0]} did not answer: ${connectionFailure(err)}`)
    } finally {
      if (timer) clearTimeout(timer)
    }
  }
  let answered: number
  try {
    const r = await fetch(url + '/api/health', { signal: AbortSignal.timeout(o.url ? 10_000 : 1000) })
    answered = r.status
    const body = (await r.json()) as { status?: string; ledger?: Record<string, unknown> }
    if (r.ok && typeof body.status === 'string') return { kind: 'http', config, url, get, health: { status: body.status, ledger: body.ledger } }
  } catch {
    if (o.url) throw new CliError(`no Burnrate answers at ${url}`)
    return local
  }
  // An explicit --url is what was asked for: another ledger's numbers (the file's) are not its.
  if (o.url) throw new CliError(`${url} did not answer as a Burnrate (its /api/health answered HTTP ${answered})`)
  return local
}

/**
 * Why a request to a server failed or its answer ended early, for a person: fetch says only
 * `fetch failed` and a body cut short `terminated`, with the reason in its `cause` (`connect
 * ECONNREFUSED 127.0.0.1:8787`, `other side closed`).
 */
export function connectionFailure(err: unknown): string {
  const e = err as { name?: string; message?: string; cause?: { message?: string; code?: string } } | null
  if (e?.name === 'TimeoutError') return 'no answer within 30 s'
  const why = e?.cause?.message || e?.message || String(err)
  const code = e?.cause?.code
  return code && /^E[A-Z]+$/.test(code) && !why.includes(code) ? `${why} (${code})` : why
}

/**
 * Whether a Burnrate runs beside this command, `--local` or not: one holds the data folder (its
 * server.lock, whatever port it listens on), or one answers at `--url`.
 * An import then leaves the newest log entries for later: that server may still be recording the
 * same answers (a stream not finished yet), and importing them first would count them twice.
 */
export async function serverRunning(o: TargetOptions, ctx: CliContext): Promise<boolean> {
  const config = configOf(o)
  if (dataDirHolder(config.data_dir)) return true
  try {
    return (await findTarget({ ...o, local: false }, ctx)).kind === 'http'
  } catch {
    return false // --url given and nothing answers there
  }
}

/** Reads a JSON answer of the server, or fails with what it said. */
export async function getJson<T>(t: Extract<Target, { kind: 'http' }>, path: string): Promise<T | null> {
  const r = await t.get(path)
  if (r.status === 404) return null
  let unread: unknown = null
  const body = (await r.json().catch((err: unknown) => ((unread = err), null))) as any
  if (r.status === 401) throw new CliError(`${t.url} refused the dashboard token; pass --token or set BURNRATE_TOKEN`)
  if (!r.ok) throw new CliError(`${t.url}${path.split('?')[0]}: ${body?.error?.message ?? `HTTP ${r.status}`}`)
  // An answer cut short (the server stopped) or not JSON is not a dashboard turned off (null).
  if (unread !== null) {
    const why = (unread as Error).name === 'SyntaxError' ? 'its answer is not JSON' : `its answer ended early: ${connectionFailure(unread)}`
    throw new CliError(`${t.url}${path.split('?')[0]}: ${why}`)
  }
  return body as T
}

async function load() {
  const [{ openDatabase }, { SchemaBehindError }] = await Promise.all([import('../ledger/db'), import('../ledger/migrations')])
  return { openDatabase, SchemaBehindError }
}
let opener: Awaited<ReturnType<typeof load>> | null = null
/** Call once before `open()` (keeps the SQLite module out of start-up until needed). */
export async function prepareLocal(): Promise<void> {
  opener ??= await load()
}

/**
 * The data folder's SQLite file (prepareLocal() first). Its schema is brought up to date only
 * while no other Burnrate serves the folder: that one (an older version) would then run on a
 * schema it does not know, and its writes could fail. Beside it, an older schema is refused.
 */
export function openLedgerFile(config: Config): Database.Database {
  const file = join(config.data_dir, DB_FILE)
  if (!opener) throw new Error('prepareLocal() first')
  const holder = dataDirHolder(config.data_dir)
  try {
    const db = opener.openDatabase(file, undefined, { upgrade: holder === null })
    db.pragma('busy_timeout = 5000')
    return db
  } catch (err) {
    if (holder && err instanceof opener.SchemaBehindError) {
      throw new CliError(
        `the ledger ${file} is at schema version ${err.current} and this burnrate needs ${err.latest}, but another Burnrate (pid ${holder.pid}) serves this data folder ${config.data_dir} at ${holder.url} and may not know the newer schema; upgrade or stop it, then run this again`,
      )
    }
    throw new CliError(`cannot open the ledger ${file}: ${(err as Error).message.split('\n')[0]}`)
  }
}

/**
 * The ledger as the CLI reads it with no server running: the data folder's SQLite file, or,
 * with `storage.url`, PostgreSQL (the calls every instance on it recorded) while the file keeps
 * this machine's import keys. `db` is always the file; `store` is where the calls are.
 */
export interface LocalLedger {
  db: Database.Database
  store: SqlStore
  /** Where the calls are, for people (the PostgreSQL URL without its password). */
  where: string
  close(): Promise<void>
}

export async function openLocalLedger(t: Extract<Target, { kind: 'local' }>): Promise<LocalLedger> {
  const db = t.open()
  const url = t.config.storage.url
  if (!url) {
    const { SqliteStore } = await import('../storage/sqlite')
    return { db, store: new SqliteStore(db), where: join(t.config.data_dir, DB_FILE), close: async () => void db.close() }
  }
  const { PostgresStore } = await import('../storage/postgres')
  const { migratePostgres } = await import('../storage/postgres-migrations')
  const { passwordOf, redactUrl } = await import('../storage/url')
  const store = new PostgresStore(url, { max: 2, applicationName: 'burnrate-cli' })
  const where = `PostgreSQL at ${redactUrl(url)}`
  const close = async () => {
    db.close()
    await store.close().catch(() => {})
  }
  try {
    // As a server would at start-up: a database no Burnrate has used yet gets its tables.
    await migratePostgres(store)
  } catch (err) {
    await close()
    const secret = passwordOf(url)
    let text = (err as Error).message ?? String(err)
    if (secret) text = text.split(secret).join('***')
    throw new CliError(`cannot reach the ledger, ${where} (storage.url): ${text}`)
  }
  return { db, store, where, close }
}

/**
 * A file or folder named on the command line. An empty one (`"$VAR"`, the variable unset) is bad
 * usage: `--data-dir ''` made a ledger in the current folder, `--config ''` read the default one,
 * `-o ''` wrote the export to stdout.
 */
export function pathOption(value: string): string {
  if (value.trim() === '') throw new InvalidArgumentError('give a path; leave the option out for its default')
  return value
}

/**
 * `--url`: a Burnrate's http(s) address. A host and port without `http://` (as one types them)
 * was asked as a URL of its own and read 'no Burnrate answers' while one did; an empty one (an
 * unset variable) was no --url, so the ledger file was read instead. Both are bad usage.
 */
export function urlOption(value: string): string {
  let u: URL | null = null
  try {
    u = new URL(value)
  } catch {
    // not a URL at all: `127.0.0.1:8787`
  }
  if (u && (u.protocol === 'http:' || u.protocol === 'https:') && !u.search && !u.hash) return value
  const meant = value.trim() && !/^[a-z][a-z0-9+.-]*:\/\//i.test(value.trim()) ? `; did you mean http://${value.trim()}?` : ''
  throw new InvalidArgumentError(`expected a Burnrate's http:// or https:// address, without ?query or #fragment${meant}`)
}

/**
 * `connect --url`: the address an agent is pointed at, a Burnrate's http(s) origin (a trailing
 * `/` is no path). Each agent's own path is added under it (`/v1`, `/code-assist`); a path given
 * (`/path`, an address copied with its page) was written into the agent's config as its base,
 * where Burnrate serves nothing, and every call of the agent failed. Else as `--url` (urlOption).
 */
export function originOption(value: string): string {
  urlOption(value)
  const u = new URL(value)
  if (u.pathname !== '/') {
    throw new InvalidArgumentError(`expected a Burnrate's http:// or https:// address without a path (each agent gets its own path under it); did you mean ${u.origin}?`)
  }
  return value
}

/**
 * `--tenant`: a tenant's id. An empty one is refused: through a server it would mean every
 * tenant (the API ignores an empty `tenant`), from the ledger file the calls with no tenant, so
 * one command would give two answers depending on whether Burnrate runs.
 */
export function tenantOption(value: string): string {
  if (value.trim() === '') throw new InvalidArgumentError('give a tenant id; leave --tenant out for every tenant')
  return value
}
