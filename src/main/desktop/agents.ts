import { spawn } from 'node:child_process'
import { join } from 'node:path'
import { Notification, app } from 'electron'
import { AgentConnections, ConnectError } from '../connect/connections'
import type { LastSeen } from '../connect/last-seen'
import { type QuitChoice, type TrayAgent, agentsHere, confirmText, headlessCommand, movedAgents, movedNotice, notRestoredQuestion, quitQuestion, shouldEnableLogin } from '../desktop-logic/agents'
import { readJsonFile, writeJsonFile } from '../desktop-logic/json-file'
import type { SystemNetwork } from '../desktop-logic/system-proxy'
import type { Logger } from '../log'
import { askOnQuit, confirmChange, showProblem } from './dialogs'
import type { LoginItem } from './login-item'

export interface AgentControlsOptions {
  connections: AgentConnections
  /** This app's server address: what agents are pointed at. */
  url: string
  /** Null when attached to another Burnrate (it owns the port; nothing to keep running on quit). */
  /** `systemProxy`: the system's proxy that server uses, which the headless server left on quit is given (it cannot ask the system). */
  ownServer: { dataDir: string; configFile: string | null; port: number; systemProxy: SystemNetwork | null } | null
  login: LoginItem
  /** Calls seen by this app's own server (null when attached). */
  lastSeen: LastSeen | null
  userData: string
  log: Logger
  /** Redraws the tray menu after a change. */
  changed(): void
}

export interface AgentControls {
  trayAgents(): TrayAgent[]
  toggle(agent: string): Promise<void>
  disconnectAll(): Promise<void>
  /** Asked before quitting while agents point here: false when the person cancelled. */
  beforeQuit(): Promise<boolean>
  /** After the server is up: notices agents still pointing at another port. */
  checkPorts(): void
}

/** Live notifications, held so a click arrives. */
const live = new Set<Notification>()

/** The Electron side of agent connections: tray toggles with a confirmation, the quit question, the moved-port notice. */
export function agentControls(o: AgentControlsOptions): AgentControls {
  const prefsFile = join(o.userData, 'desktop-prefs.json')
  const prefs = () => (readJsonFile(prefsFile) ?? {}) as { login_offered?: boolean }
  const loginEnabled = () => {
    try {
      return o.login.enabled()
    } catch {
      return false
    }
  }
  const nameOf = (agent: string) => o.connections.connector(agent).name

  /** The first connected agent turns on start at login, once (see shouldEnableLogin). */
  const keepRunning = () => {
    const p = prefs()
    if (!shouldEnableLogin({ connected: o.connections.connected().length, loginEnabled: loginEnabled(), alreadyOffered: p.login_offered === true })) return
    try {
      o.login.set(true)
      writeJsonFile(prefsFile, { ...p, login_offered: true })
      o.log.info('start at login turned on: an agent now depends on Burnrate running')
    } catch (err) {
      o.log.warn(`start at login: ${(err as Error).message}`)
    }
  }

  const run = (fn: () => unknown) => {
    try {
      fn()
    } catch (err) {
      if (err instanceof ConnectError) showProblem(err.message)
      else throw err
    }
  }

  return {
    trayAgents() {
      try {
        return o.connections.list().map((a) => {
          let lastCallAt: number | null | undefined
          if (o.lastSeen) {
            const iso = o.lastSeen.of(o.connections.connector(a.agent).recordedAs).last_call_at
            lastCallAt = iso ? Date.parse(iso) : null
          }
          return { agent: a.agent, name: a.name, connected: a.connected, installed: a.installed && !a.unsupported, lastCallAt }
        })
      } catch {
        return []
      }
    },
    async toggle(agent) {
      let plan
      try {
        const connected = o.connections.connected().some((c) => c.agent === agent)
        plan = connected ? o.connections.planDisconnect(agent) : o.connections.planConnect(agent, o.url)
      } catch (err) {
        if (err instanceof ConnectError) return showProblem(err.message)
        throw err
      }
      if (!(await confirmChange(confirmText(plan, nameOf(agent))))) return
      run(() => {
        if (plan.action === 'connect') o.connections.connect(agent, o.url, { planId: plan.id })
        else o.connections.disconnect(agent, { planId: plan.id })
      })
      if (plan.action === 'connect') keepRunning()
      o.changed()
    },
    async disconnectAll() {
      for (const r of o.connections.disconnectAll()) if (r.error) showProblem(`${nameOf(r.agent)}: ${r.error.message}`)
      o.changed()
    },
    async beforeQuit() {
      // Also one connected to this Burnrate under another loopback name (localhost for 127.0.0.1).
      const connected = agentsHere(o.connections.connected(), o.url)
      if (!o.ownServer || connected.length === 0) return true
      const q = quitQuestion(connected.map((c) => nameOf(c.agent)), o.url)
      let choice: QuitChoice = q.choices[await askOnQuit(q)] ?? 'cancel'
      if (choice === 'disconnect') {
        const failures: { name: string; error: string }[] = []
        // Only the agents the question named (pointing here): one pointed at another Burnrate (a
        // team server) keeps working without this one, and was not asked about.
        for (const { agent } of connected) {
          try {
            o.connections.disconnect(agent)
          } catch (err) {
            if (!(err instanceof ConnectError)) throw err
            o.log.warn(`disconnect ${agent}: ${err.message}`)
            failures.push({ name: nameOf(agent), error: err.message })
          }
        }
        // An agent still pointing here would fail once Burnrate stops: asked again, never quit silently.
        if (failures.length > 0) {
          o.changed()
          const again = notRestoredQuestion(failures, o.url)
          choice = again.choices[await askOnQuit(again)] ?? 'cancel'
        }
      }
      if (choice === 'cancel') return false
      if (choice === 'keep-server') {
        const own = o.ownServer
        // Started once this app's server has closed and freed the port (see app.ts).
        app.once('will-quit', () => {
          const cmd = headlessCommand({ execPath: process.execPath, cliJs: join(app.getAppPath(), 'out', 'main', 'cli.js'), ...own, env: process.env })
          try {
            spawn(cmd.command, cmd.args, { env: cmd.env, detached: true, stdio: 'ignore' }).unref()
            o.log.info(`left a headless Burnrate running on port ${own.port}`)
          } catch (err) {
            o.log.error(`could not start the headless server: ${(err as Error).message}`)
          }
        })
      }
      return true
    },
    checkPorts() {
      // Only this app's own address at an old port: an agent pointed at another Burnrate (a team
      // server) is not stranded by this one moving, and moving it would stop it being metered there.
      const elsewhere = movedAgents(o.connections.connected(), o.url)
      if (elsewhere.length === 0 || !Notification.isSupported()) return
      const text = movedNotice(elsewhere.map((c) => nameOf(c.agent)), elsewhere.map((c) => c.url), o.url)
      const n = new Notification({ title: text.title, body: text.body, urgency: 'critical' })
      live.add(n)
      n.on('click', () => {
        live.delete(n)
        // The agents named, as still recorded now (one connected elsewhere since is left alone).
        const named = new Set(elsewhere.map((c) => c.agent))
        for (const { agent } of movedAgents(o.connections.connected(), o.url).filter((c) => named.has(c.agent))) {
          try {
            o.connections.connect(agent, o.url)
          } catch (err) {
            if (!(err instanceof ConnectError)) throw err
            showProblem(`${nameOf(agent)}: ${err.message}`)
          }
        }
        o.changed()
      })
      n.on('close', () => live.delete(n))
      n.show()
    },
  }
}
