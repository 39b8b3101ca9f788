import type Database from 'better-sqlite3'
import type { SessionInference } from '../agents/sessions'
import type { BudgetMeters } from '../budgets/types'
import type { Config } from '../config/schema'
import type { Egress } from '../http/egress'
import type { CallLedger } from '../ledger/types'
import type { Logger } from '../log'
import type { CallNotices } from '../ledger/notices'
import type { Pricer } from '../pricing/price'
import type { Prices } from '../pricing/types'
import type { HeadersObserver } from '../proxy/call/forward'
import type { RecorderOptions } from '../proxy/call/recording'
import type { ConnectContext } from '../connect/types'
import type { CallGate } from '../proxy/gate'
import type { PlanTracker } from '../plans/tracker'
import type { Upstream } from '../proxy/routes'
import type { SqlStore } from '../storage/sql'
import type { ApiRoutes } from './api-app'

/** Sees a plan's meter that an answer's body carried. */
export type ReadingObserver = NonNullable<RecorderOptions['observeReading']>

/** What a feature (health, admin, dashboard, ...) gets from the server core. */
export interface ServerContext {
  config: Config
  /** This instance's own SQLite database (with `storage.url`, only what is local to the instance). */
  db: Database.Database
  /**
   * The shared store every ledger read goes through (dashboard, export, report, admin):
   * SQLite over `db` by default, PostgreSQL with `storage.url`.
   */
  store: SqlStore
  /** The ledger's write side: SQLite's `Ledger`, or `PgLedger` with `storage.url`. */
  ledger: CallLedger
  log: Logger
  version: string
  startedAt: number
  upstreams: Map<string, Upstream>
  /** The routes of everything that is not a proxied call (an express app built when first needed: ./api-app.ts); mount paths are absolute. */
  app: ApiRoutes
  /** Prices every proxied call (runtime prices and price updates change it in place). */
  pricer: Pricer
  /** Runtime prices and the price-data updater, set by the pricing feature (null until then). */
  prices: Prices | null
  /** Budget state, set by the budgets feature (null until then). */
  budgets: BudgetMeters | null
  /** The sessions given to calls whose client sends no session id (absent in contexts without a proxy). */
  sessions?: SessionInference
  /** Plan windows read from the vendors' response headers, set by the plans feature (null until then). */
  plans: PlanTracker | null
  /** SQLite: calls another process (`burnrate import`) stores in this file, as it stores them (null with `storage.url`). */
  notices: CallNotices | null
  /** How Burnrate's own calls out (price updates, webhooks, team reports, OTLP export) reach the outside: the proxy and CAs of `upstream`. */
  egress: Egress
  /** Adds an observer of every upstream answer's status and headers. */
  observeHeaders(fn: HeadersObserver): void
  /** Adds an observer of the plan meters that answers' bodies carry (Gemini Code Assist's quotas). */
  observeReadings(fn: ReadingObserver): void
  /** Installs the gate every proxied call passes before going upstream (budgets). */
  setGate(gate: CallGate): void
  /** This server's address once listening (`http://127.0.0.1:8787`; a wildcard listen is reached on loopback). */
  url(): string
  /** The home folder, environment and platform whose agents the admin API may connect. */
  agentHome: ConnectContext
  /** Runs when the server stops, before the ledger is flushed and the database closed. */
  onClose(fn: () => void | Promise<void>): void
  /**
   * Runs at an exit that cannot wait for the `onClose` functions (a second signal: `keepPending`),
   * once the calls it cut are recorded: what must leave the process before it ends (the OTLP
   * export's last spans and points), each bounded by its own short wait.
   */
  onExit(fn: () => Promise<void>): void
  /**
   * Wraps the handling of every proxied call (the metrics' upstream timing runs it in its
   * scope); null when nothing does. Set once, at start-up.
   */
  aroundProxy: ((provider: string, handle: () => void) => void) | null
  /** More sections of `GET /api/health` (e.g. `otel`), each read when health is asked for. */
  healthSections: Record<string, () => unknown>
}

/**
 * A capability of the server, installed once at start-up. One that must load code first (only
 * when configured on: metrics, OTLP export) returns a promise; the server listens once every
 * feature has settled.
 */
export type Feature = (ctx: ServerContext) => void | Promise<void>
