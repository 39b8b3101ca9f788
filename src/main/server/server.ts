import http from 'node:http'
import { homedir } from 'node:os'
import type Database from 'better-sqlite3'
import { version } from '../../../package.json'
import type { Config } from '../config/schema'
import { admin } from '../admin'
import { SessionInference } from '../agents/sessions'
import { spendCounter, spendMover } from '../budgets/state/pg/call-spend'
import { batchRecorder } from '../batch/record'
import { alerts } from '../alerts'
import { budgets } from '../budgets'
import { health } from '../health'
import { Ledger } from '../ledger/ledger'
import { RUNTIME_BUSY_MS, STARTUP_BUSY_MS, setBusyTimeout } from '../ledger/db'
import { CallNotices } from '../ledger/notices'
import type { CallLedger } from '../ledger/types'
import { retention } from '../ledger/retention'
import { createLogger, type Logger } from '../log'
import { settleEstimates, useEstimateThread } from '../metering/estimator'
import { stopIdleExportThreads, useExportThread } from '../dashboard/export-thread'
import { plans } from '../plans/feature'
import { pricing } from '../pricing/feature'
import { Pricer } from '../pricing/price'
import { PROVIDERS } from '../providers/registry'
import { ledgerLog } from '../reliability/ledger-log'
import { keepPending as spillPending, ledgerSpill } from '../reliability/spill'
import { OPEN_GATE, type CallGate, everyCredential } from '../proxy/gate'
import type { HeadersObserver } from '../proxy/call/forward'
import { backgroundSettler } from '../pricing/background'
import { importSuperseder } from '../import/superseder'
import { createProxyHandler, type ProxyHandler } from '../proxy/handler'
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
import type { Feature, ReadingObserver, ServerContext } from './context'
import { HEADERS_TIMEOUT_MS, limitConnections } from './connections'
import { cutAtStop } from '../proxy/call/stop-cut'
import { ApiApp } from './api-app'
import { idleCollector, type IdleCollectorOptions } from './idle-gc'
import { holdAgain } from './startup-tiering'
import { UNDICI_BUILTINS, preloadUndici } from '../proxy/call/undici'
import { lockedAtStartup, openDataFolder } from './data-folder'
import { createDispatch } from './dispatch'
import { listenOn } from './listen'
import { StartupError } from './startup-error'
import { readCaFile } from './ca-file'
import { journalIdle } from './journal-idle'

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
  const keepPending = async (): Promise<void> => {
    // A call answered whose usage is being estimated (a background job's queued answer reports
    // none) is recorded, with its hold, once the estimate is in: a turn after it is settled.
    settleEstimates()
    await new Promise<void>((r) => setImmediate(r))
    if (ledger instanceof Ledger) {
      spillPending(ledger, config.data_dir, log)
      // The exit follows at once: the journal's file work (its removal once the flush stored what it
      // held, an append still opening it) ends first, or the next start would apply its rows again.
      await journalIdle(ledger, log)
    } else if (ledger.keepQueued) await ledger.keepQueued()
    else ledger.flush()
  }
  /** After the ledger's last flush failed: its queue to a spill file, without waiting on the lock again (SQLite; PostgreSQL's close journals its own). */
  const spillAfterClose = (flushed: boolean): void => {
    if (!flushed && ledger instanceof Ledger) spillPending(ledger, config.data_dir, log, { flushFirst: false })
  }
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
  let gate: CallGate = OPEN_GATE
  const closers: (() => void | Promise<void>)[] = []
  const exits: (() => Promise<void>)[] = []
  const observers: HeadersObserver[] = []
  const readingObservers: ReadingObserver[] = []
  const pricer = new Pricer(config.pricing.overrides, (msg) => log.warn(msg), config.pricing.google_search_grounding)
  // The API app's routes price (re-pricing, the dashboard's costs): the prices are made ready with express.
  const app = new ApiApp(log, () => pricer.ready())
  let url = ''
  const context: ServerContext = {
    config,
    db,
    store: storage.store,
    ledger,
    log,
    version,
    startedAt: Date.now(),
    upstreams,
    app,
    pricer,
    prices: null,
    budgets: null,
    plans: null,
    notices,
    egress,
    observeHeaders: (fn) => {
      observers.push(fn)
    },
    observeReadings: (fn) => {
      readingObservers.push(fn)
    },
    setGate: (g) => {
      // A call carrying several API keys passes only if the gate admits each (a decoy key cannot stand in).
      gate = everyCredential(g)
    },
    onClose: (fn) => {
      closers.push(fn)
    },
    onExit: (fn) => {
      exits.push(fn)
    },
    aroundProxy: null,
    healthSections: { data_dir: () => folder, ...(storage.health ? { storage: storage.health } : {}) },
    url: () => reachable(url),
    agentHome: opts.agentHome ?? { home: homedir(), env: process.env, platform: process.platform },
  }
  context.sessions = seededSessions(context)
  // An imported answer gives way to the proxy's record of it as the proxy records it.
  importSuperseder(context, storage.store.dialect === 'postgres' ? spendMover(config) : undefined, opts.supersedeAfterMs)
  const proxy = createProxyHandler({
    log,
    network,
    ledger,
    pricer,
    gate: () => gate,
    tenants: config.tenants.key_mappings,
    timeouts: config.upstream,
    maxBufferedBytes: config.server.max_buffered_body_mb * 1024 * 1024,
    sessions: context.sessions,
    observeHeaders: (s, status, h, at) => {
      for (const o of observers) o(s, status, h, at)
    },
    observeReading: (s, reading) => {
      for (const o of readingObservers) o(s, reading)
    },
    settleBackground: backgroundSettler(context, storage.store.dialect === 'postgres' ? spendMover(config) : undefined),
    recordBatch: batchRecorder(context, storage.store.dialect === 'postgres' ? spendCounter(config) : undefined),
  })
  // A feature that loads code first (metrics, OTLP export, when on) returns a promise: listen() waits for it.
  const installing: Promise<void>[] = []
  try {
    for (const feature of opts.features ?? FEATURES) {
      const p = feature(context)
      if (p) installing.push(p)
    }
  } catch (err) {
    // A feature refused the config: what already started (a PostgreSQL ledger's timers and pool,
    // features' timers) stops, and nothing recorded is lost, before the error is reported.
    void (async () => {
      // Each step whatever another does: one that threw ended this before the ledger's last flush, and the folder stayed claimed.
      for (const fn of closers) await stopStep(log, "a feature's close step", fn)
      await stopStep(log, "the ledger's last flush", async () => spillAfterClose(await ledger.close()))
      await stopStep(log, 'the spill journal', () => journalIdle(ledger, log))
      await storage.close().catch(() => {})
      await stopStep(log, 'the network client', () => egress.close())
      await stopStep(log, 'the database', () => db.close())
      lock.release()
    })()
    throw lockedAtStartup(err, db.name, busyMs) ?? err
  }
  // Started: from now on a write on the event loop that finds the file locked is retried later.
  setBusyTimeout(db, RUNTIME_BUSY_MS)
  if (notices) {
    notices.start()
    closers.push(() => notices.close())
  }
  if (config.import.watch ?? opts.watchLogs ?? false) {
    // Loaded only when watching: the headless server never reads the import code.
    void import('../import/watcher').then(({ LogWatcher }) => {
      if (closing) return
      // PostgreSQL mode: imported calls go to the shared ledger; the import keys stay in this machine's file.
      const target = storage.store.dialect === 'postgres' ? { store: storage.store, countSpend: spendCounter(config), moveSpend: spendMover(config) } : {}
      // The logs of the agents the admin API connects (agentHome: the user's own, but for tests).
      const w = new LogWatcher({ db, ledger, pricer, log, budgets: () => context.budgets, env: context.agentHome.env, home: context.agentHome.home, ...target }).start()
      closers.unshift(() => w.stop())
    })
  }

  // Host, cross-site and dashboard-token checks, before anything else (proxy, API, page).
  let listenPort = config.server.port
  const guard = createRequestGuard({ config, port: () => listenPort })
  // Memory is given back when the server is quiet; every request counts as activity.
  const idle = opts.idleCollection === false ? null : idleCollector(opts.idleCollection)
  const { onRequest, setUp } = createDispatch({ router, guard, idle, proxy, app, context, log })
  const serverOptions: http.ServerOptions = {
    keepAliveTimeout: 65_000,
    // Headers must arrive within this (checked every second); once they are in, no time limit:
    // long uploads and streams are never cut (requestTimeout 0), idle upstreams have their own.
    headersTimeout: opts.headersTimeoutMs ?? HEADERS_TIMEOUT_MS,
    requestTimeout: 0,
    connectionsCheckingInterval: 1000,
    requireHostHeader: false,
    // Only a WebSocket upgrade is taken up (the proxy's relay, ./dispatch.ts). Any other offer
    // (Java's HttpClient and curl --http2 send `Upgrade: h2c` with a POST) is a plain request:
    // taken as an upgrade, its body would never be read (Node 22.21 / 24.9 and later).
    shouldUpgradeCallback: (req) => req.method === 'GET' && /^websocket$/i.test(String(req.headers.upgrade ?? '')),
  }
  const server = setUp(http.createServer(serverOptions, onRequest))
  // One cap over every listening address (both halves of `localhost`).
  const connections = limitConnections(server, config.server.max_connections)
  const newServer = (): http.Server => {
    const s = setUp(http.createServer(serverOptions, onRequest))
    connections.watch(s)
    return s
  }
  let ipv6: http.Server | null = null
  let closing: Promise<boolean> | null = null

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
      ipv6 = await listenOn(server, config.server.host, config.server.port, newServer, log, (port, u) => {
        listenPort = port
        url = u
        lock.listening(reachable(url))
      })
      idle?.start()
      // What the server answers before it needs it loads a moment after it answers (before the
      // start-up collection at 1 s of quiet takes its garbage), unless a request needed it
      // first: the proxy's HTTP client (undici) and the API app (express and its routes).
      const preloadMs = opts.apiPreloadMs ?? API_PRELOAD_MS
      if (preloadMs !== false) {
        setTimeout(() => {
          if (closing) return
          const resume = holdAgain(UNDICI_BUILTINS)
          try {
            preloadUndici()
          } finally {
            resume()
          }
          app.preload()
        }, preloadMs).unref()
      }
      return url
    },
    async keepPending() {
      // The calls under way are cut, as a stop past its grace cuts them, and so recorded (the
      // upstream has billed what it sent) before the queue is kept: an exit loses them otherwise.
      for (const s of connections.all()) cutAtStop(s)
      proxy.stopLeftAnswers()
      if (!(await proxy.drain(1_000))) {
        settleEstimates()
        await proxy.drain(1_000)
      }
      await keepPending()
      // The calls just recorded (cut, settled) are in the ledger: the OTLP export sends them too.
      await Promise.allSettled(exits.map((fn) => fn()))
    },
    close(graceMs = 10_000) {
      closing ??= (async () => {
        let ok = true
        const step = async (what: string, fn: () => unknown) => {
          if (!(await stopStep(log, what, fn))) ok = false
        }
        idle?.stop()
        server.close()
        server.closeIdleConnections()
        ipv6?.close()
        ipv6?.closeIdleConnections()
        await proxy.drain(graceMs)
        // Whatever is still streaming is cut; those calls are recorded as cut by the stop (503 burnrate_stopped).
        for (const s of connections.all()) cutAtStop(s)
        // ...and so are the answers read on for their bill after their client left (recorded 499 with what came).
        proxy.stopLeftAnswers()
        if (!(await proxy.drain(2_000))) {
          // Estimates still being counted are taken from their length rather than lost.
          settleEstimates()
          await proxy.drain(1_000)
        }
        // Every step runs, and the ledger's last flush after them, whichever fails: a step that
        // threw ended the stop here, its queue unwritten (the headless server exits as it settles).
        for (const fn of closers) await step("a feature's close step", fn)
        // Last: what the closers recorded too (a hold let go, a settled estimate) is in this flush or the spill file.
        await step("the ledger's last flush", async () => spillAfterClose(await ledger.close()))
        await step('the spill journal', () => journalIdle(ledger, log))
        await step('the proxy', () => proxy.close())
        await step('the network client', () => egress.close())
        // (Not a failed stop: a pool that does not close cleanly loses nothing.)
        await storage.close().catch((err: Error) => log.warn(`closing the shared store: ${err.message}`))
        await step('the database', () => db.close())
        lock.release()
        // Export threads kept for a next export (none is under way: the connections are gone).
        stopIdleExportThreads()
        return ok
      })()
      return closing
    },
  }
}

/** One step of a stop: a failure (thrown, or rejected) is logged and the stop goes on to the next. False when it failed. */
async function stopStep(log: Logger, what: string, fn: () => unknown): Promise<boolean> {
  try {
    await fn()
    return true
  } catch (err) {
    log.error(`stopping: ${what} failed (${(err as Error)?.message ?? err}); the stop goes on`)
    return false
  }
}

/** Session inference, continuing the sessions still open in the ledger. */
function seededSessions(ctx: ServerContext): SessionInference {
  const sessions = new SessionInference()
  sessions.seed(ctx.store).catch((err: Error & { code?: string }) => {
    // A new PostgreSQL database read before its schema is made (the ledger migrates it meanwhile) has no sessions to read.
    if (err.code === '42P01') return
    ctx.log.warn(`sessions: could not read the sessions still open: ${err.message}`)
  })
  return sessions
}

/** A listen URL as a client reaches it: a wildcard address (0.0.0.0, ::) on loopback. */
function reachable(url: string): string {
  return url.replace('//0.0.0.0:', '//127.0.0.1:').replace('//[::]:', '//[::1]:')
}
