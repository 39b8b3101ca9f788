import http from 'node:http'
import type { AddressInfo, Socket } from 'node:net'
import { homedir } from 'node:os'
import { join } from 'node:path'
import type Database from 'better-sqlite3'
import { version } from '../../../package.json'
import { DB_FILE } from '../config/paths'
import type { Config } from '../config/schema'
import { admin } from '../admin'
import { SessionInference } from '../agents/sessions'
import { budgets } from '../budgets'
import { health } from '../health'
import { answerClientError } from '../http/client-error'
import { sendError } from '../http/errors'
import { openDatabase } from '../ledger/db'
import { Ledger } from '../ledger/ledger'
import { createLogger, type Logger } from '../log'
import { Pricer } from '../pricing/price'
import { PROVIDERS } from '../providers/registry'
import { ledgerLog } from '../reliability/ledger-log'
import { ledgerSpill } from '../reliability/spill'
import { OPEN_GATE, type CallGate } from '../proxy/gate'
import { createProxyHandler, type ProxyHandler } from '../proxy/handler'
import { Router, buildUpstreams } from '../proxy/routes'
import { checkExposure } from '../security/exposure'
import { createRequestGuard } from '../security/guard'
import { dashboard } from '../dashboard'
import { dashboardUi } from '../ui'
import type { ConnectContext } from '../connect/types'
import type { Feature, ServerContext } from './context'
import { createApiApp, finishApiApp } from './express'

/** The capabilities every server has, in mount order. */
export const FEATURES: Feature[] = [health, ledgerLog, ledgerSpill, budgets, admin, dashboard, dashboardUi]

export class StartupError extends Error {
  override name = 'StartupError'
}

export interface BurnrateServer {
  readonly config: Config
  readonly db: Database.Database
  readonly ledger: Ledger
  readonly context: ServerContext
  readonly proxy: ProxyHandler
  /** `http://host:port` once listening. */
  readonly url: string
  readonly http: http.Server
  listen(): Promise<string>
  /** Stops accepting calls, lets calls under way finish (up to `graceMs`), flushes the ledger, closes the database. */
  close(graceMs?: number): Promise<void>
}

export interface CreateOptions {
  log?: Logger
  /** Features to install instead of FEATURES (tests). */
  features?: Feature[]
  /** Whose agents the admin API connects (default: this process's user). */
  agentHome?: ConnectContext
  /** The built ledger write thread (out/main/ledger-worker.js): see LedgerOptions.writeThread. */
  ledgerWorker?: URL | string
}

/** Builds the whole server core: proxy, ledger, and the API and dashboard routes, on one port. */
export function createBurnrate(config: Config, opts: CreateOptions = {}): BurnrateServer {
  const log = opts.log ?? createLogger()
  checkExposure(config, log)
  const dbFile = join(config.data_dir, DB_FILE)
  let db: Database.Database
  try {
    db = openDatabase(dbFile)
  } catch (err) {
    const e = err as NodeJS.ErrnoException
    throw new StartupError(
      `cannot open the database ${dbFile} (${e.code ?? 'error'}: ${e.message.split('\n')[0]}); make sure the data folder is writable, or choose another with --data-dir`,
    )
  }
  const ledger = new Ledger(db, {
    flushIntervalMs: config.ledger.flush_interval_ms,
    maxPending: config.ledger.max_pending,
    timezone: config.timezone,
    writeThread: opts.ledgerWorker,
  })
  const upstreams = buildUpstreams(PROVIDERS, config.providers)
  const router = new Router(upstreams)
  let gate: CallGate = OPEN_GATE
  const closers: (() => void | Promise<void>)[] = []
  const app = createApiApp()
  let url = ''
  const context: ServerContext = {
    config,
    db,
    ledger,
    log,
    version,
    startedAt: Date.now(),
    upstreams,
    app,
    budgets: null,
    setGate: (g) => {
      gate = g
    },
    onClose: (fn) => {
      closers.push(fn)
    },
    url: () => reachable(url),
    agentHome: opts.agentHome ?? { home: homedir(), env: process.env, platform: process.platform },
  }
  const proxy = createProxyHandler({
    ledger,
    pricer: new Pricer(config.pricing.overrides),
    gate: () => gate,
    tenants: config.tenants.key_mappings,
    timeouts: config.upstream,
    sessions: seededSessions(db),
  })
  for (const feature of opts.features ?? FEATURES) feature(context)
  finishApiApp(app, log)

  // Host, cross-site and dashboard-token checks, before anything else (proxy, API, page).
  let listenPort = config.server.port
  const guard = createRequestGuard({ config, port: () => listenPort })
  const server = http.createServer({ keepAliveTimeout: 65_000, requestTimeout: 0, requireHostHeader: false }, (req, res) => {
    const route = router.match(req.url ?? '/', req.headers)
    if (!guard(req, res, route !== null)) return
    if (route) {
      proxy.handle(req, res, route).catch((err: Error) => {
        // A bug on the hot path costs this call, never the process.
        log.error(`proxy: ${err?.message ?? String(err)}`)
        if (!res.headersSent) sendError(res, 'internal', 'Burnrate hit an internal error with this call; the details are in its log.')
        else res.destroy()
      })
    }
    else app(req, res)
  })
  const sockets = new Set<Socket>()
  server.on('clientError', answerClientError)
  server.on('connection', (s) => {
    sockets.add(s)
    s.on('close', () => sockets.delete(s))
  })
  let closing: Promise<void> | null = null

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
    listen() {
      const { host, port } = config.server
      return new Promise<string>((resolve, reject) => {
        const onError = (err: NodeJS.ErrnoException) => {
          server.off('listening', onListening)
          if (err.code === 'EADDRINUSE') {
            reject(new StartupError(`${host}:${port} is already in use; stop what is using it or start with --port <n>`))
          } else if (err.code === 'EACCES') {
            reject(new StartupError(`not allowed to listen on ${host}:${port}; choose a port above 1023 with --port <n>`))
          } else if (err.code === 'EADDRNOTAVAIL' || err.code === 'ENOTFOUND') {
            reject(new StartupError(`cannot listen on ${host}: no such address on this machine`))
          } else {
            reject(new StartupError(`cannot listen on ${host}:${port}: ${err.message}`))
          }
        }
        const onListening = () => {
          server.off('error', onError)
          const a = server.address() as AddressInfo
          listenPort = a.port
          const h = a.family === 'IPv6' ? `[${a.address}]` : a.address
          url = `http://${h}:${a.port}`
          resolve(url)
        }
        server.once('error', onError)
        server.once('listening', onListening)
        server.listen(port, host)
      })
    },
    close(graceMs = 10_000) {
      closing ??= (async () => {
        server.close()
        server.closeIdleConnections()
        await proxy.drain(graceMs)
        // Whatever is still streaming is cut; those calls are recorded as aborted.
        for (const s of sockets) s.destroy()
        await proxy.drain(2_000)
        for (const fn of closers) await fn()
        ledger.close()
        await proxy.close()
        db.close()
      })()
      return closing
    },
  }
}

/** Session inference, continuing the sessions still open in the ledger. */
function seededSessions(db: Database.Database): SessionInference {
  const sessions = new SessionInference()
  sessions.seed(db)
  return sessions
}

/** A listen URL as a client reaches it: a wildcard address (0.0.0.0, ::) on loopback. */
function reachable(url: string): string {
  return url.replace('//0.0.0.0:', '//127.0.0.1:').replace('//[::]:', '//[::1]:')
}
