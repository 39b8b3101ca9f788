import { randomBytes } from 'node:crypto'
import { createWriteStream, mkdirSync } from 'node:fs'
import { homedir } from 'node:os'
import { join } from 'node:path'
import { app, clipboard, shell } from 'electron'
import { budgetsOf } from '../budgets'
import { forecast } from '../budgets/forecast'
import { ConfigError, loadConfig } from '../config/load'
import { AgentConnections } from '../connect/connections'
import { LastSeen } from '../connect/last-seen'
import { CONFIG_FILE } from '../config/paths'
import type { Config } from '../config/schema'
import { agentSetup } from '../desktop-logic/agent-setup'
import { startsHidden } from '../desktop-logic/autostart'
import { readJsonFile, writeJsonFile } from '../desktop-logic/json-file'
import { BudgetNotifier, NoticeLog } from '../desktop-logic/notices'
import { RunawayNoticeLog, runawayNotice } from '../desktop-logic/runaway-notices'
import { PortTakenError, type StartResult, reachableUrl, startOrAttach } from '../desktop-logic/port'
import { type SpendSource, httpSpend, ledgerSpend } from '../desktop-logic/spend-source'
import type { TrayAction } from '../desktop-logic/tray-menu'
import { PlanNoticeLog, httpPlans, planNotice } from '../desktop-logic/tray-plans'
import { TrayPresenter } from '../desktop-logic/tray-presenter'
import { type Logger, createLogger } from '../log'
import { type BurnrateServer, type CreateOptions, createBurnrate } from '../server/server'
import { PeriodClock } from '../time/zone'
import { type AgentControls, agentControls } from './agents'
import { askOtherPort, showStartupError } from './dialogs'
import { startAutoUpdate } from './updater'
import { loginItem } from './login-item'
import { showNotice } from './notifications'
import { appIcon, trayIcons } from './resources'
import { type TrayHandle, createTray } from './tray'
import { type MainWindow, createMainWindow } from './window'

/** electron-builder.yml's appId. */
export const APP_ID = 'dev.burnrate.app'

export interface DesktopOptions {
  argv?: readonly string[]
  env?: NodeJS.ProcessEnv
  platform?: NodeJS.Platform
  log?: Logger
  /** Server features instead of the core's FEATURES (tests). */
  features?: CreateOptions['features']
  /** The home folder whose agents the tray connects (tests); default the user's. */
  home?: string
  /** Quit on SIGINT/SIGTERM (electron-vite dev's Ctrl+C). */
  signals?: boolean
  /** The built estimate thread (out/main/estimate-worker.js), as for the headless server. */
  estimateWorker?: CreateOptions['estimateWorker']
}

/** The running desktop app. */
export interface Desktop {
  /** The server the window and the tray use. */
  url: string
  /** This process's server, or null when attached to another Burnrate. */
  server: BurnrateServer | null
  attachedTo: string | null
  config: Config
  window: MainWindow
  tray: TrayHandle
  presenter: TrayPresenter
  agents: AgentControls
  /** What a tray menu item does. */
  act(action: TrayAction): void
  /** Stops the tray and notifications, then the server (finishing calls and flushing the ledger). */
  shutdown(): Promise<void>
}

/** Logs to stderr (development) and to `logs/burnrate.log` in userData (a packaged app has no terminal). */
function desktopLogger(userData: string): Logger {
  let file: ReturnType<typeof createWriteStream> | null = null
  try {
    mkdirSync(join(userData, 'logs'), { recursive: true })
    file = createWriteStream(join(userData, 'logs', 'burnrate.log'), { flags: 'a' })
    file.on('error', () => {
      file = null
    })
  } catch {
    file = null
  }
  return createLogger('info', (line) => {
    process.stderr.write(line)
    file?.write(line)
  })
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
 * The desktop app: the same server core as the headless entry (loadConfig + createBurnrate),
 * with its data in userData, or attached to a headless Burnrate already on the port; the
 * dashboard in a native window loaded from that server; today's spend in the tray.
 * Returns null when this launch ends at once (a second instance, a start-up error).
 */
export async function runDesktop(opts: DesktopOptions = {}): Promise<Desktop | null> {
  const argv = opts.argv ?? process.argv
  const env = opts.env ?? process.env
  const platform = opts.platform ?? process.platform

  if (!app.requestSingleInstanceLock()) {
    app.quit()
    return null
  }
  let desktop: Desktop | null = null
  app.on('second-instance', () => desktop?.window.show())
  // Closing the window keeps the app in the tray.
  app.on('window-all-closed', () => {})
  await app.whenReady()
  // Windows shows notifications only for an app whose model id matches its Start-menu shortcut.
  if (platform === 'win32') app.setAppUserModelId(APP_ID)

  const userData = app.getPath('userData')
  const log = opts.log ?? desktopLogger(userData)
  const dataDir = env.BURNRATE_DATA_DIR || userData
  let config: Config
  let server: BurnrateServer | null = null
  let result: StartResult
  let adminToken: string | null
  try {
    config = loadConfig({ dataDir }, env)
    // The window connects agents through the admin API: with none configured, this app's own
    // server gets one for this run, with a random token only the window is given.
    const cfg: Config = { ...config, server: { ...config.server } }
    if (!cfg.admin.enabled) cfg.admin = { ...cfg.admin, enabled: true, token: randomBytes(32).toString('base64url') }
    adminToken = cfg.admin.token ?? null
    result = await startOrAttach({
      host: cfg.server.host,
      port: cfg.server.port,
      listen: async (port) => {
        cfg.server.port = port
        server ??= createBurnrate(cfg, { log, features: opts.features, estimateWorker: opts.estimateWorker, watchLogs: true })
        return listenOn(server)
      },
      askOtherPort: (taken, suggested, detail) => askOtherPort(taken, suggested, detail, config.source ?? join(dataDir, CONFIG_FILE)),
    })
  } catch (err) {
    const s = server as BurnrateServer | null
    if (s) await s.close(0).catch(() => {})
    const message = err instanceof ConfigError ? err.message : `${(err as Error).message ?? err}`
    log.error(`cannot start: ${message}`)
    showStartupError(message)
    app.quit()
    return null
  }
  if (result.kind === 'cancelled') {
    const s = server as BurnrateServer | null
    if (s) await s.close(0).catch(() => {})
    log.warn(`not started: ${result.reason}`)
    app.quit()
    return null
  }

  const url = reachableUrl(result.url)
  const attachedTo = result.kind === 'attached' ? url : null
  let own = server as BurnrateServer | null
  if (result.kind === 'attached' && own) {
    // Built before another Burnrate took the port: it never listened; release its database.
    await own.close(0).catch(() => {})
    own = null
  }
  if (result.kind === 'attached') log.info(`a Burnrate (version ${result.version}) already serves ${url}: attaching to it`)
  else log.info(`Burnrate listening on ${url} (data: ${config.data_dir}, config: ${config.source ?? 'defaults'})`)

  // With dashboard.token set, the server wants it from every dashboard client, this one included:
  // the window and the browser open `/?token=` once (the server answers with a cookie), the
  // attached tray sends it as a bearer token.
  const token = config.dashboard.token || null
  const dashboardUrl = token ? `${url}/?token=${encodeURIComponent(token)}` : url
  // Attached to another Burnrate, only its configured admin token (if any) works there.
  const windowAdminToken = own ? adminToken : config.admin.enabled ? (config.admin.token ?? null) : null
  // In the fragment: never sent to the server nor logged; the page keeps it for the tab and removes it from the address.
  const windowUrl = windowAdminToken ? `${dashboardUrl}#admin_token=${encodeURIComponent(windowAdminToken)}` : dashboardUrl
  const spend: SpendSource = own
    ? ledgerSpend(own.ledger)
    : httpSpend(url, { headers: token ? { authorization: `Bearer ${token}` } : undefined })
  const budgets = own?.context.budgets ?? null
  const login = loginItem(platform, env)
  const loginEnabled = () => {
    try {
      return login.enabled()
    } catch {
      return false
    }
  }
  const window = createMainWindow({
    url: windowUrl,
    stateFile: join(userData, 'window-state.json'),
    show: !startsHidden(argv, login.openedAtLogin()),
    icon: platform === 'darwin' ? undefined : appIcon(),
  })

  const lastSeen = own ? new LastSeen(own.context.store) : null
  void lastSeen?.seeded()
  const offLastSeen = own && lastSeen ? own.ledger.onCall((call) => lastSeen.observe(call)) : null
  const agents = agentControls({
    connections: new AgentConnections({ home: opts.home ?? homedir(), env, platform, dataDir: config.data_dir }),
    url,
    ownServer: own ? { dataDir: config.data_dir, configFile: config.source ?? null, port: Number(new URL(url).port) } : null,
    login,
    lastSeen,
    userData,
    log,
    changed: () => tray.refreshMenu(),
  })
  const act = (action: TrayAction) => {
    if (action.startsWith('toggle-agent:')) {
      void agents.toggle(action.slice('toggle-agent:'.length)).catch((err: Error) => log.error(`agent: ${err.message}`))
      return
    }
    switch (action) {
      case 'disconnect-all':
        void agents.disconnectAll()
        break
      case 'open-dashboard':
        window.show()
        break
      case 'open-in-browser':
        void shell.openExternal(dashboardUrl)
        break
      case 'copy-agent-setup':
        clipboard.writeText(agentSetup(url, platform))
        break
      case 'toggle-login':
        try {
          login.set(!loginEnabled())
        } catch (err) {
          log.warn(`start at login: ${(err as Error).message}`)
        }
        tray.refreshMenu()
        break
      case 'quit':
        app.quit()
        break
    }
  }
  const tray = createTray({ platform, icons: trayIcons(platform), attachedTo, startAtLogin: loginEnabled, agents: () => agents.trayAgents(), act })
  const attachedPlans = own ? null : httpPlans(url, { headers: token ? { authorization: `Bearer ${token}` } : undefined })
  const plans = own?.context.plans ?? attachedPlans
  const clock = new PeriodClock(config.timezone)
  const paceOf = (today: number, now: number) => {
    const day = clock.dayOf(now)
    return forecast({ period: 'daily', limit: Infinity, spent: today, start: day.start, resetsAt: day.end }, now).projected
  }
  const presenter = new TrayPresenter({ spend, budgets, plans, platform, paceOf, render: (view) => tray.render(view) })
  presenter.start()

  let notifier: BudgetNotifier | null = null
  if (budgets) {
    const noticesFile = join(userData, 'notices.json')
    notifier = new BudgetNotifier({
      monitor: budgets,
      log: NoticeLog.fromJSON(readJsonFile(noticesFile)),
      timezone: config.timezone,
      show: (notice) => showNotice(notice, () => window.show(), platform === 'darwin' ? undefined : appIcon()),
      save: (noticeLog) => writeJsonFile(noticesFile, noticeLog),
    })
    notifier.start()
  }

  // Runaway agents (loops, session spend-rate alarms): once per session and kind, from this
  // app's own server only (attached to another Burnrate, its dashboard and webhooks have them).
  const runawayNotices = new RunawayNoticeLog()
  const runawaySettings = { windowMinutes: config.runaway.loop.window_minutes, usdPerMinute: config.runaway.spend_rate.usd_per_minute }
  const offRunaway = own?.context.budgets
    ? budgetsOf(own.context).runaway.onEvent((e) => {
        if (!runawayNotices.claim(e)) return
        showNotice(runawayNotice(e, runawaySettings), () => window.show(), platform === 'darwin' ? undefined : appIcon())
      })
    : undefined

  // Plan windows at 80% and 95%: once per window period (the tracker remembers which it showed).
  const planNoticesFile = join(userData, 'plan-notices.json')
  const planNotices = PlanNoticeLog.fromJSON(readJsonFile(planNoticesFile))
  const offPlans = own?.context.plans?.onAlert((a) => {
    if (!planNotices.claim(a)) return
    try {
      writeJsonFile(planNoticesFile, planNotices)
    } catch {
      // not remembering costs at most a repeated notice after a restart
    }
    showNotice(planNotice(a), () => window.show(), platform === 'darwin' ? undefined : appIcon())
  })

  let stopping: Promise<void> | null = null
  const shutdown = () =>
    (stopping ??= (async () => {
      presenter.stop()
      notifier?.stop()
      offRunaway?.()
      offPlans?.()
      attachedPlans?.stop()
      stopUpdates?.()
      offLastSeen?.()
      spend.stop()
      window.allowClose()
      window.saveState()
      if (own) await own.close()
      tray.destroy()
    })())

  // Quitting: while agents point here, ask first what becomes of them (disconnect, keep a headless
  // server, or quit anyway); then hold the quit until calls under way finish and the ledger is on
  // disk, and quit for real.
  let stopped = false
  let asking = false
  app.on('before-quit', (event) => {
    if (stopped) {
      window.allowClose()
      return
    }
    event.preventDefault()
    if (asking || stopping) return
    asking = true
    void agents
      .beforeQuit()
      .catch((err: Error) => {
        log.error(`quit: ${err.message}`)
        return true
      })
      .then((go) => {
        asking = false
        if (!go) return
        window.allowClose()
        return shutdown()
          .catch((err: Error) => log.error(`shutdown: ${err.message}`))
          .finally(() => {
            stopped = true
            app.quit()
          })
      })
  })
  app.on('activate', () => window.show())
  if (opts.signals ?? true) {
    process.once('SIGINT', () => app.quit())
    process.once('SIGTERM', () => app.quit())
  }

  // Started on another port than the one agents were connected to: say so, and re-point them on a click.
  agents.checkPorts()
  let stopUpdates: (() => void) | null = null
  void startAutoUpdate(env, log)
    .then((stop) => (stopUpdates = stop))
    .catch((err: Error) => log.warn(`auto-update: ${err.message}`))

  desktop = { url, server: own, attachedTo, config, window, tray, presenter, agents, act, shutdown }
  return desktop
}
