import { homedir } from 'node:os'
import { join } from 'node:path'
import { app, session } from 'electron'
import { forecast } from '../budgets/forecast'
import { AgentConnections } from '../connect/connections'
import { LastSeen } from '../connect/last-seen'
import type { Config } from '../config/schema'
import { startsHidden } from '../desktop-logic/autostart'
import { httpBudgets } from '../desktop-logic/budget-source'
import { sweepLoginPages } from '../desktop-logic/browser-login'
import { polledBudgetUnpriced, withUnpricedCounts } from '../desktop-logic/budget-unpriced'
import { budgetsAnswer } from '../dashboard/budgets-answer'
import { ownListener } from '../desktop-logic/listener-owner'
import { type SpendSource, httpSpend, ledgerSpend } from '../desktop-logic/spend-source'
import type { TrayAction } from '../desktop-logic/tray-menu'
import { httpPlans } from '../desktop-logic/tray-plans'
import { TrayPresenter } from '../desktop-logic/tray-presenter'
import type { Logger } from '../log'
import type { BurnrateServer, CreateOptions } from '../server/server'
import { PeriodClock } from '../time/zone'
import { type AgentControls, agentControls } from './agents'
import { startAlerts } from './alerts'
import { desktopLogger } from './log-file'
import { loginItem } from './login-item'
import { holdQuit } from './quit'
import { appIcon, trayIcons } from './resources'
import { startServer } from './start'
import { type TrayHandle, createTray } from './tray'
import { trayActions } from './tray-actions'
import { startAutoUpdate } from './updater'
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
  // A launch while this one is still starting (a dialog up, the database loading) opens the window once it is there.
  let launchedAgain = false
  app.on('second-instance', () => (desktop ? desktop.window.show() : (launchedAgain = true)))
  // Closing the window keeps the app in the tray.
  app.on('window-all-closed', () => {})
  await app.whenReady()
  // Windows shows notifications only for an app whose model id matches its Start-menu shortcut.
  if (platform === 'win32') app.setAppUserModelId(APP_ID)

  const userData = app.getPath('userData')
  const log = opts.log ?? desktopLogger(userData)
  // Open in browser's private pages a quit within their minute left behind (../desktop-logic/browser-login.ts).
  sweepLoginPages(userData)
  const started = await startServer({
    dataDir: userData,
    env,
    log,
    features: opts.features,
    estimateWorker: opts.estimateWorker,
    resolveProxy: (url) => session.defaultSession.resolveProxy(url),
    home: opts.home,
    platform,
  })
  if (!started) {
    app.quit()
    return null
  }
  const { config, own, url, attachedTo } = started

  // With dashboard.token set, the server wants it from every dashboard client, this one included:
  // the window (and attached, the browser) opens `/login#token=`, whose page posts it (the server
  // answers with a cookie; never in an address the server, a proxy's log or a Referer sees), the
  // attached tray sends it as a bearer token.
  const token = config.dashboard.token || null
  // Attached, each poll first checks that no other user's program has taken the server's port since
  // it was identified (the server stopped): the token would go to it, and its numbers be shown.
  const auth = { ...(token ? { headers: { authorization: `Bearer ${token}` } } : {}), ...(own ? {} : { allowed: ownListener(url) }) }
  const dashboardUrl = token ? `${url}/login#token=${encodeURIComponent(token)}` : url
  // Attached to another Burnrate, only its configured admin token (if any) works there.
  const windowAdminToken = own ? started.adminToken : config.admin.enabled ? (config.admin.token ?? null) : null
  // In the fragment: never sent to the server nor logged; the page keeps it for the tab and removes
  // it from the address (the login page passes it on to the dashboard it lands on).
  const adminFragment = windowAdminToken ? `admin_token=${encodeURIComponent(windowAdminToken)}` : null
  const windowUrl = !adminFragment ? dashboardUrl : token ? `${dashboardUrl}&${adminFragment}` : `${url}#${adminFragment}`
  // A team server's today is its dashboard's, its members' calls included: its in-memory counters
  // (budgets run on its own calls only) leave those out, so it reads its own summary, as when attached.
  const teamServer = config.team.members.length > 0 && config.dashboard.enabled
  const spend: SpendSource = own && !teamServer ? ledgerSpend(own.ledger, { store: own.context.store }) : httpSpend(url, auth)
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
    show: launchedAgain || !startsHidden(argv, login.openedAtLogin()),
    icon: platform === 'darwin' ? undefined : appIcon(),
    allowed: own ? undefined : auth.allowed,
  })
  const openDashboard = () => window.show()

  const lastSeen = own ? new LastSeen(own.context.store) : null
  void lastSeen?.seeded()
  const offLastSeen = own && lastSeen ? own.ledger.onCall((call) => lastSeen.observe(call)) : null
  const agents = agentControls({
    connections: new AgentConnections({ home: opts.home ?? homedir(), env, platform, dataDir: config.data_dir }),
    url,
    ownServer: own ? { dataDir: config.data_dir, configFile: config.source ?? null, port: Number(new URL(url).port), systemProxy: started.systemProxy } : null,
    login,
    lastSeen,
    userData,
    log,
    changed: () => tray.refreshMenu(),
  })
  // The browser is opened with a one-time login code of this app's own server, never the token: the
  // address goes on the command line that starts the browser, which other users see in `ps`.
  // (Attached to another Burnrate, only its token can log in.)
  const browserUrl = (): string => (own ? own.dashboardLoginUrl() : dashboardUrl)
  const act = trayActions({ agents, login, loginEnabled, openDashboard, dashboardUrl: browserUrl, userData, url, platform, log, refreshMenu: () => tray.refreshMenu() })
  const tray = createTray({ platform, icons: trayIcons(platform), attachedTo, startAtLogin: loginEnabled, agents: () => agents.trayAgents(), act })
  const attachedPlans = own ? null : httpPlans(url, auth)
  const attachedBudgets = own ? null : httpBudgets(url, auth)
  // The own server's meters count money only: each window's calls of no known price are read from
  // its budgets answer (as the dashboard's) every 5 seconds, off the proxy's path, and marked on
  // the tray's budget line and the notifications (an attached server's answers carry them).
  const ownContext = own?.context.budgets ? own.context : null
  let redraw = (): void => {}
  const budgetUnpriced = ownContext ? polledBudgetUnpriced(() => budgetsAnswer(ownContext, null, Date.now()), { changed: () => redraw() }) : null
  const ownBudgets = ownContext?.budgets && budgetUnpriced ? withUnpricedCounts(ownContext.budgets, budgetUnpriced) : null
  // Today's spend is projected over the day it was summed in: an attached server's zone, else the app's.
  const ownClock = new PeriodClock(config.timezone)
  let clock = ownClock
  const paceOf = (today: number, now: number) => {
    const zone = spend.timezone?.() ?? config.timezone
    if (clock.tz !== zone) clock = zone === config.timezone ? ownClock : new PeriodClock(zone)
    const day = clock.dayOf(now)
    return forecast({ period: 'daily', limit: Infinity, spent: today, start: day.start, resetsAt: day.end }, now).projected
  }
  const presenter = new TrayPresenter({
    spend,
    budgets: own ? ownBudgets : attachedBudgets,
    plans: own?.context.plans ?? attachedPlans,
    platform,
    paceOf,
    render: (view) => tray.render(view),
  })
  presenter.start()
  redraw = () => presenter.update()
  // The attached monitor also tells when a level is gone (the own server's state is redrawn by the 30 s refresh).
  attachedBudgets?.subscribe(() => presenter.update())
  const stopAlerts = startAlerts({ own, budgets: own ? ownBudgets : attachedBudgets, ready: budgetUnpriced?.ready, config, userData, platform, openDashboard })

  let stopUpdates: (() => void) | null = null
  let stopping: Promise<void> | null = null
  const shutdown = () =>
    (stopping ??= (async () => {
      presenter.stop()
      sweepLoginPages(userData)
      stopAlerts()
      attachedPlans?.stop()
      attachedBudgets?.stop()
      budgetUnpriced?.stop()
      stopUpdates?.()
      offLastSeen?.()
      spend.stop()
      window.allowClose()
      window.saveState()
      if (own) await own.close()
      tray.destroy()
    })())
  holdQuit({ agents, window, shutdown, shuttingDown: () => stopping !== null, log })
  app.on('activate', () => window.show())
  if (opts.signals ?? true) {
    process.once('SIGINT', () => app.quit())
    process.once('SIGTERM', () => app.quit())
  }

  // Started on another port than the one agents were connected to: say so, and re-point them on a click.
  agents.checkPorts()
  void startAutoUpdate(env, log)
    .then((stop) => (stopUpdates = stop))
    .catch((err: Error) => log.warn(`auto-update: ${err.message}`))

  desktop = { url, server: own, attachedTo, config, window, tray, presenter, agents, act, shutdown }
  return desktop
}
