import { randomBytes } from 'node:crypto'
import { homedir } from 'node:os'
import { ConfigError, configPath, dataDirAnyway, loadConfig } from '../config/load'
import type { Config } from '../config/schema'
import { PortTakenError, type StartResult, probePort, reachableUrl, startOrAttach } from '../desktop-logic/port'
import { type SystemNetwork, systemNetwork } from '../desktop-logic/system-proxy'
import type { Logger } from '../log'
import { dataDirHolder } from '../server/data-lock'
import { type BurnrateServer, type CreateOptions, createBurnrate } from '../server/server'
import { AgentConnections } from '../connect/connections'
import { askOtherPort, askStartupErrorDisconnect, showStartupError } from './dialogs'

/** The server the app runs on: its own, or a headless Burnrate already on the port. */
export interface Started {
  config: Config
  /** This process's server, or null when attached to another Burnrate. */
  own: BurnrateServer | null
  url: string
  attachedTo: string | null
  /** The admin token this app's own server was given (one of its own when none is configured). */
  adminToken: string | null
  /** The system's proxy this app's server uses (null: none, or the config or environment names one); a headless server it leaves needs it too. */
  systemProxy: SystemNetwork | null
}

export interface StartOptions {
  /** userData: where config.yaml is, and the data folder unless the config or BURNRATE_DATA_DIR names another. */
  dataDir: string
  env: NodeJS.ProcessEnv
  log: Logger
  features?: CreateOptions['features']
  estimateWorker?: CreateOptions['estimateWorker']
  /** The system's proxy for a URL (Electron's `session.resolveProxy`), used when neither the config nor the environment names one. */
  resolveProxy?: (url: string) => Promise<string>
  /** The home folder whose agents may be connected (tests); default the user's. */
  home?: string
  platform?: NodeJS.Platform
}

/** `upstream` with the system's proxy settings in it, when they name a proxy and neither the config nor the environment does (desktop-logic/system-proxy.ts). */
async function withSystemProxy(
  config: Config,
  env: NodeJS.ProcessEnv,
  resolve: (url: string) => Promise<string>,
  log: Logger,
): Promise<{ upstream: Config['upstream']; sys: SystemNetwork | null }> {
  let sys: Awaited<ReturnType<typeof systemNetwork>>
  try {
    sys = await systemNetwork(config, env, resolve)
  } catch (err) {
    log.warn(`could not read the system's proxy settings (${(err as Error).message}); calls go out directly unless upstream.proxy or HTTPS_PROXY is set`)
    return { upstream: config.upstream, sys: null }
  }
  if (!sys) return { upstream: config.upstream, sys: null }
  log.info(`using the system's proxy ${sys.proxy} for calls out (upstream.proxy or HTTPS_PROXY would override it)${sys.direct.length ? `; directly: ${sys.direct.join(', ')}` : ''}`)
  if (sys.unlike.length) log.warn(`the system's proxy settings name another proxy, or only SOCKS4, for ${sys.unlike.join(', ')}; they go through ${sys.proxy} (set upstream.proxy and upstream.no_proxy to choose)`)
  return { upstream: { ...config.upstream, proxy: sys.proxy, no_proxy: [...config.upstream.no_proxy, ...sys.direct] }, sys }
}

/** How long the Burnrate named by the data folder's server.lock is given to answer its health check. */
const HOLDER_ANSWER_MS = 20_000

/**
 * The Burnrate that already serves this data folder, wherever it listens (the headless server
 * "Keep a server running" left on the port chosen when the configured one was taken, or on a
 * port the system picked), found by its server.lock and attached to when it answers as Burnrate.
 * Null otherwise: a server of this app's own could not claim the folder while it runs, so the
 * attempt gives its error only then.
 */
async function attachToHolder(dataDir: string): Promise<StartResult | null> {
  const holder = dataDirHolder(dataDir)
  if (!holder) return null
  let host: string
  let port: number
  try {
    const u = new URL(holder.url)
    host = u.hostname.replace(/^\[|\]$/g, '')
    port = Number(u.port)
  } catch {
    return null
  }
  // Port 0: it has not listened yet, and its address is not known.
  if (!port) return null
  // A live Burnrate of this user's holds the folder: give it time to answer (its first health
  // check loads its API, seconds on a busy machine); a server of the app's own could not start.
  const owner = await probePort(host, port, HOLDER_ANSWER_MS)
  return owner.kind === 'burnrate' ? { kind: 'attached', url: owner.url, version: owner.version } : null
}

/**
 * Says why the app cannot start. Agents connected to Burnrate are stranded while it is stopped (a
 * typo in config.yaml, the database unreadable): the dialog offers to disconnect them, with the
 * data folder found even when the config does not load; not while another Burnrate serves it.
 */
async function startFailed(message: string, o: StartOptions): Promise<void> {
  let connections: AgentConnections | null = null
  let agents: string[] = []
  try {
    const dataDir = dataDirAnyway({ defaultDataDir: o.dataDir }, o.env)
    // Another Burnrate serves this data folder (one still starting, not answering yet): its agents
    // reach it, and disconnecting them would stop their metering there.
    if (dataDirHolder(dataDir)) return showStartupError(message)
    connections = new AgentConnections({ home: o.home ?? homedir(), env: o.env, platform: o.platform ?? process.platform, dataDir })
    agents = connections.connected().map((c) => c.agent)
  } catch {
    // the records cannot be read: the error alone
  }
  if (!connections || agents.length === 0) return showStartupError(message)
  if (!(await askStartupErrorDisconnect(message, agents.map((a) => connections.connector(a).name)))) return
  const failed: string[] = []
  for (const a of agents) {
    try {
      connections.disconnect(a)
      o.log.info(`${a}: disconnected (Burnrate cannot start)`)
    } catch (err) {
      failed.push(`${a}: ${(err as Error).message}`)
    }
  }
  if (failed.length) showStartupError(`Not every agent could be disconnected:\n${failed.join('\n')}`)
}

/** Listens, turning "address in use" into PortTakenError so the attach-or-offer logic can decide. */
async function listenOn(server: BurnrateServer): Promise<string> {
  let code: string | undefined
  const onError = (e: NodeJS.ErrnoException) => {
    code = e.code
  }
  server.http.once('error', onError)
  try {
    return await server.listen()
  } catch (err) {
    if (code === 'EADDRINUSE') throw new PortTakenError((err as Error).message)
    throw err
  } finally {
    server.http.off('error', onError)
  }
}

/**
 * Loads the configuration and starts the server core (as the headless entry does), or attaches
 * to a Burnrate already serving the port, or offers another port. Null when the app cannot start
 * (the error was shown) or the user cancelled: the caller quits.
 */
export async function startServer(o: StartOptions): Promise<Started | null> {
  const { dataDir, env, log } = o
  let config: Config
  let server: BurnrateServer | null = null
  let result: StartResult
  let adminToken: string | null
  let systemProxy: SystemNetwork | null = null
  try {
    // userData is where the config is looked for and the data folder by default; the config's
    // data_dir (or BURNRATE_DATA_DIR) moves the data as it does for the command line's `serve`.
    config = loadConfig({ defaultDataDir: dataDir }, env)
    // The window connects agents through the admin API: with none configured, this app's own
    // server gets one for this run, with a random token only the window is given.
    const cfg: Config = { ...config, server: { ...config.server } }
    if (!cfg.admin.enabled) cfg.admin = { ...cfg.admin, enabled: true, token: randomBytes(32).toString('base64url') }
    if (o.resolveProxy) ({ upstream: cfg.upstream, sys: systemProxy } = await withSystemProxy(config, env, o.resolveProxy, log))
    adminToken = cfg.admin.token ?? null
    const c = config
    result = (await attachToHolder(config.data_dir)) ?? await startOrAttach({
      host: cfg.server.host,
      port: cfg.server.port,
      listen: async (port) => {
        cfg.server.port = port
        // The agents the window connects and whose logs it watches: those of the home and environment it was given.
        server ??= createBurnrate(cfg, { log, features: o.features, estimateWorker: o.estimateWorker, watchLogs: true, agentHome: { home: o.home ?? homedir(), env, platform: o.platform ?? process.platform } })
        return listenOn(server)
      },
      askOtherPort: (taken, suggested, detail) => askOtherPort(taken, suggested, detail, c.source ?? configPath({ defaultDataDir: dataDir }, env)),
    })
  } catch (err) {
    const s = server as BurnrateServer | null
    if (s) await s.close(0).catch(() => {})
    const message = err instanceof ConfigError ? err.message : `${(err as Error).message ?? err}`
    log.error(`cannot start: ${message}`)
    await startFailed(message, o)
    return null
  }
  if (result.kind === 'cancelled') {
    const s = server as BurnrateServer | null
    if (s) await s.close(0).catch(() => {})
    log.warn(`not started: ${result.reason}`)
    return null
  }

  const url = reachableUrl(result.url)
  let own = server as BurnrateServer | null
  if (result.kind === 'attached' && own) {
    // Built before another Burnrate took the port: it never listened; release its database.
    await own.close(0).catch(() => {})
    own = null
  }
  if (result.kind === 'attached') log.info(`a Burnrate (version ${result.version}) already serves ${url}: attaching to it`)
  else log.info(`Burnrate listening on ${url} (data: ${config.data_dir}, config: ${config.source ?? 'defaults'})`)
  return { config, own, url, attachedTo: result.kind === 'attached' ? url : null, adminToken, systemProxy: own ? systemProxy : null }
}
