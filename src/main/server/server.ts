import type http from 'node:http'
import { homedir } from 'node:os'
import type Database from 'better-sqlite3'
import type { Config } from '../config/schema'
import { admin } from '../admin'
import { spendMover } from '../budgets/state/pg/call-spend'
import { alerts } from '../alerts'
import { budgets } from '../budgets'
import { health } from '../health'
import { Ledger } from '../ledger/ledger'
import { RUNTIME_BUSY_MS, STARTUP_BUSY_MS, setBusyTimeout } from '../ledger/db'
import { CallNotices } from '../ledger/notices'
import type { CallLedger } from '../ledger/types'
import { retention } from '../ledger/retention'
import { createLogger, type Logger } from '../log'
import { useEstimateThread } from '../metering/estimator'
import { useExportThread } from '../dashboard/export-thread'
import { plans } from '../plans/feature'
import { pricing } from '../pricing/feature'
import { Pricer } from '../pricing/price'
import { PROVIDERS } from '../providers/registry'
import { ledgerLog } from '../reliability/ledger-log'
import { ledgerSpill } from '../reliability/spill'
import { importSuperseder } from '../import/superseder'
import type { ProxyHandler } from '../proxy/handler'
import { createEgress } from '../http/egress'
import { proxyProblems } from '../http/network'
import { Router, buildUpstreams } from '../proxy/routes'
import { checkExposure } from '../security/exposure'
import { createRequestGuard } from '../security/guard'
import { dataFolderState, sharedFolderWarning } from '../security/shared-folder'
import { checkTokens } from '../security/tokens'
import { dashboard } from '../dashboard'
import { metrics } from '../metrics'
import { otel } from '../otel'
import { dashboardUi } from '../ui'
import { team } from '../team'
import type { ConnectContext } from '../connect/types'
import type { Feature, ServerContext } from './context'
import { ApiApp } from './api-app'
import { buildContext } from './build-context'
import { idleCollector, type IdleCollectorOptions } from './idle-gc'
import { lockedAtStartup, openDataFolder } from './data-folder'
import { createDispatch } from './dispatch'
import { createHttpServers } from './http-servers'
import { listenOn } from './listen'
import { watchLogs } from './log-watch'
import { preloadLater } from './preload'
import { wireProxy } from './proxy-wiring'
import { StartupError } from './startup-error'
import { readCaFile } from './ca-file'
import { type Held, abandonStart, keepPendingAtExit, stopServer } from './stop'

/** The capabilities every server has, in mount order. */
export const FEATURES: Feature[] = [health, ledgerLog, ledgerSpill, retention, pricing, plans, budgets, alerts, admin, dashboard, team, metrics, otel, dashboardUi]

/** How long after listening the proxy's HTTP client and the API app (express, the dashboard's routes) are loaded if nothing needed them yet. */
const API_PRELOAD_MS = 200

export { StartupError }

export interface BurnrateServer {
  readonly config: Config
  readonly db: Database.Database
  readonly ledger: CallLedger
  readonly context: ServerContext
  readonly proxy: ProxyHandler
  /** `http://host:port` once listening. */
  readonly url: string
  /**
   * The dashboard's address for a browser: with dashboard.token, a one-time login link
   * (`/login#login=<code>`, good once for a minute) rather than the token, which the command line that
   * opens the browser would show every user of the machine. The code is in the fragment, which no
   * request line (nor access log, nor Referer) holds: the login page posts it (../security/login-page.ts).
   */
  dashboardLoginUrl(): string
  readonly http: http.Server
  /** Memory-reducing collections run while quiet so far (null: turned off). */
  readonly idleCollections: number | null
  listen(): Promise<string>
  /**
   * Stops accepting calls, lets calls under way finish (up to `graceMs`), flushes the ledger,
   * closes the database. A step that fails is logged and the others still run (the ledger's flush
   * with them); resolves once all have, with false when one failed (the headless server exits 1).
   */
  close(graceMs?: number): Promise<boolean>
  /**
   * For an exit that cannot wait for `close`: cuts the calls under way (recorded as a stop past
   * its grace records them, within about 2 s), answers the token estimates still being counted
   * from their length (their calls are then recorded, a background job's budget hold with them),
   * and writes what the ledger has queued, or keeps it in a spill file when the database cannot
   * take it (SQLite); PostgreSQL's ledger keeps its queue in its spill journal without waiting for
   * the database. Resolves once that is done, the SQLite spill journal's file work with it (its
   * removal once the last write stored what it held; at most 5 s), as `close` waits for it.
   */
  keepPending(): Promise<void>
}

export interface CreateOptions {
  log?: Logger
  /** Features to install instead of FEATURES (tests). */
  features?: Feature[]
  /** Whose agents the admin API connects and the log watcher reads (default: this process's user). */
  agentHome?: ConnectContext
  /** The built ledger write thread (out/main/ledger-worker.js): see LedgerOptions.writeThread. */
  ledgerWorker?: URL | string
  /** How long the ledger's write thread may sit idle before it ends (tests shorten it; default 5 s). */
  ledgerThreadIdleMs?: number
  /** How often calls other processes stored in the SQLite file are looked for (default 2 s). */
  noticeIntervalMs?: number
  /** The built estimate thread (out/main/estimate-worker.js): token estimates are counted there. */
  estimateWorker?: URL | string
  /** The built export thread (out/main/export-worker.js): big exports are read and formatted there. */
  exportWorker?: URL | string
  /** Time allowed for a request's headers (tests shorten it). */
  headersTimeoutMs?: number
  /** How long start-up waits for another process's write lock on the SQLite file (default STARTUP_BUSY_MS; tests shorten it). */
  startupBusyMs?: number
  /** When the server gives memory back once quiet (see idle-gc.ts); false: never (tests that measure the heap themselves). */
  idleCollection?: IdleCollectorOptions | false
  /** How long after listening undici and the API app are loaded if no request needed them (default 200 ms; false: only when first needed). */
  apiPreloadMs?: number | false
  /** Watch the agents' log folders when the config's `import.watch` does not say (the desktop app: true). */
  watchLogs?: boolean
  /** How long after the proxy records an answer its imported twin is looked for (default SUPERSEDE_AFTER_MS; tests of the next read's supersede lengthen it). */
  supersedeAfterMs?: number
}

/** Builds the whole server core: proxy, ledger, and the API and dashboard routes, on one port. */
export function createBurnrate(config: Config, opts: CreateOptions = {}): BurnrateServer {
  const log = opts.log ?? createLogger()
  checkTokens(config)
  checkExposure(config, log)
  const network = { proxy: config.upstream.proxy, no_proxy: config.upstream.no_proxy, ca: readCaFile(config) }
  const egress = createEgress(network)
  for (const p of proxyProblems(network)) log.warn(`network: ${p}`)
  // One server per data folder (see data-lock.ts); with storage.url too, the folder holds this instance's own state.
  const busyMs = opts.startupBusyMs ?? STARTUP_BUSY_MS
  const { db, lock, storage } = openDataFolder(config, { log, ledgerWorker: opts.ledgerWorker, ledgerThreadIdleMs: opts.ledgerThreadIdleMs }, busyMs)
  const ledger = storage.ledger
  // Checked once the database has made a folder of the user's own private (../ledger/db.ts).
  const folder = dataFolderState(config.data_dir)
  if (folder.shared) log.warn(sharedFolderWarning(config.data_dir, folder))
  // SQLite: calls `burnrate import` stores in the same file while this server runs count in its
  // spend (and, once the budgets feature reads them, its meters) within seconds.
  let notices: CallNotices | null = null
  if (ledger instanceof Ledger) {
    notices = new CallNotices(db, opts.noticeIntervalMs)
    ledger.readNotices(notices)
  }
  useEstimateThread(opts.estimateWorker)
  useExportThread(opts.exportWorker)
  const upstreams = buildUpstreams(PROVIDERS, config.providers)
  const router = new Router(upstreams)
  const pricer = new Pricer(config.pricing.overrides, (msg) => log.warn(msg), config.pricing.google_search_grounding)
  // The API app's routes price (re-pricing, the dashboard's costs): the prices are made ready with express.
  const app = new ApiApp(log, () => pricer.ready())
  let url = ''
  const agentHome = opts.agentHome ?? { home: homedir(), env: process.env, platform: process.platform }
  const { context, hooks } = buildContext({ config, db, storage, log, upstreams, app, pricer, notices, egress, folder, url: () => reachable(url), agentHome })
  const held: Held = { db, lock, storage, dataDir: config.data_dir, log, egress, closers: hooks.closers }
  // An imported answer gives way to the proxy's record of it as the proxy records it.
  importSuperseder(context, storage.store.dialect === 'postgres' ? spendMover(config) : undefined, opts.supersedeAfterMs)
  const proxy = wireProxy(config, context, hooks, network)
  // A feature that loads code first (metrics, OTLP export, when on) returns a promise: listen() waits for it.
  const installing: Promise<void>[] = []
  try {
    for (const feature of opts.features ?? FEATURES) {
      const p = feature(context)
      if (p) installing.push(p)
    }
  } catch (err) {
    // A feature refused the config: what already started stops, and nothing recorded is lost, before the error is reported.
    void abandonStart(held)
    throw lockedAtStartup(err, db.name, busyMs) ?? err
  }
  // Started: from now on a write on the event loop that finds the file locked is retried later.
  setBusyTimeout(db, RUNTIME_BUSY_MS)
  if (notices) {
    notices.start()
    hooks.closers.push(() => notices.close())
  }
  if (config.import.watch ?? opts.watchLogs ?? false) watchLogs(config, context, hooks, () => closing !== null)

  // Host, cross-site and dashboard-token checks, before anything else (proxy, API, page).
  let listenPort = config.server.port
  const guard = createRequestGuard({ config, port: () => listenPort })
  // Memory is given back when the server is quiet; every request counts as activity.
  const idle = opts.idleCollection === false ? null : idleCollector(opts.idleCollection)
  const dispatch = createDispatch({ router, guard, idle, proxy, app, context, log })
  const { server, connections, more } = createHttpServers(dispatch, config.server.max_connections, opts.headersTimeoutMs)
  let ipv6: http.Server | null = null
  let closing: Promise<boolean> | null = null
  const serving = { idle, servers: () => [server, ipv6], proxy, connections }

  return {
    config,
    db,
    ledger,
    context,
    proxy,
    http: server,
    get url() {
      return url
    },
    dashboardLoginUrl() {
      const code = guard.loginCode()
      return code === null ? reachable(url) : `${reachable(url)}/login#login=${code}`
    },
    get idleCollections() {
      return idle ? idle.collections : null
    },
    async listen() {
      await Promise.all(installing)
      ipv6 = await listenOn(server, config.server.host, config.server.port, more, log, (port, u) => {
        listenPort = port
        url = u
        lock.listening(reachable(url))
      })
      idle?.start()
      const preloadMs = opts.apiPreloadMs ?? API_PRELOAD_MS
      if (preloadMs !== false) preloadLater(preloadMs, app, () => closing !== null)
      return url
    },
    keepPending: () => keepPendingAtExit(held, serving, hooks.exits),
    close(graceMs = 10_000) {
      closing ??= stopServer(held, serving, graceMs)
      return closing
    },
  }
}

/** A listen URL as a client reaches it: a wildcard address (0.0.0.0, ::) on loopback. */
function reachable(url: string): string {
  return url.replace('//0.0.0.0:', '//127.0.0.1:').replace('//[::]:', '//[::1]:')
}
