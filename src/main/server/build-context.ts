import type Database from 'better-sqlite3'
import { version } from '../../../package.json'
import { SessionInference } from '../agents/sessions'
import type { Config } from '../config/schema'
import type { ConnectContext } from '../connect/types'
import type { Egress } from '../http/egress'
import type { CallNotices } from '../ledger/notices'
import type { Logger } from '../log'
import type { Pricer } from '../pricing/price'
import type { HeadersObserver } from '../proxy/call/forward'
import { OPEN_GATE, type CallGate, everyCredential } from '../proxy/gate'
import type { Upstream } from '../proxy/routes'
import type { DataFolderState } from '../security/shared-folder'
import type { Storage } from '../storage/open'
import type { ApiRoutes } from './api-app'
import type { ReadingObserver, ServerContext } from './context'

/** What the features hand back through the context: the server core reads these. */
export interface ContextHooks {
  /** onClose steps, in the order a stop runs them. */
  closers: (() => void | Promise<void>)[]
  /** onExit steps. */
  exits: (() => Promise<void>)[]
  observers: HeadersObserver[]
  readingObservers: ReadingObserver[]
  /** The gate every proxied call passes (the last one set; open until then). */
  gate(): CallGate
}

export interface ContextParts {
  config: Config
  db: Database.Database
  storage: Storage
  log: Logger
  upstreams: Map<string, Upstream>
  app: ApiRoutes
  pricer: Pricer
  notices: CallNotices | null
  egress: Egress
  folder: DataFolderState
  /** This server's address as a client reaches it, once listening. */
  url: () => string
  agentHome: ConnectContext
}

/** The context every feature is installed with, and the hooks it fills in; its sessions continue the ones still open in the ledger. */
export function buildContext(p: ContextParts): { context: ServerContext; hooks: ContextHooks } {
  let gate: CallGate = OPEN_GATE
  const hooks: ContextHooks = { closers: [], exits: [], observers: [], readingObservers: [], gate: () => gate }
  const { storage, folder } = p
  const context: ServerContext = {
    config: p.config,
    db: p.db,
    store: storage.store,
    ledger: storage.ledger,
    log: p.log,
    version,
    startedAt: Date.now(),
    upstreams: p.upstreams,
    app: p.app,
    pricer: p.pricer,
    prices: null,
    budgets: null,
    plans: null,
    notices: p.notices,
    egress: p.egress,
    observeHeaders: (fn) => {
      hooks.observers.push(fn)
    },
    observeReadings: (fn) => {
      hooks.readingObservers.push(fn)
    },
    setGate: (g) => {
      // A call carrying several API keys passes only if the gate admits each (a decoy key cannot stand in).
      gate = everyCredential(g)
    },
    onClose: (fn) => {
      hooks.closers.push(fn)
    },
    onExit: (fn) => {
      hooks.exits.push(fn)
    },
    aroundProxy: null,
    healthSections: { data_dir: () => folder, ...(storage.health ? { storage: storage.health } : {}) },
    url: p.url,
    agentHome: p.agentHome,
  }
  context.sessions = seededSessions(context)
  return { context, hooks }
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
