import type { ConnectPlan } from '../../shared/connect'
import { type SystemNetwork, proxyEnv } from './system-proxy'

/** An agent as the tray shows it. */
export interface TrayAgent {
  agent: string
  name: string
  connected: boolean
  installed: boolean
  /** Its last call through this app's proxy (ms), null for none yet; undefined when not known here (attached). */
  lastCallAt?: number | null
}

/** `just now`, `5 min ago`, `3 h ago`, `2 days ago`. */
export function ago(ms: number, now: number): string {
  const s = Math.max(0, Math.round((now - ms) / 1000))
  if (s < 60) return 'just now'
  if (s < 3600) return `${Math.floor(s / 60)} min ago`
  if (s < 86_400) return `${Math.floor(s / 3600)} h ago`
  const d = Math.floor(s / 86_400)
  return `${d} day${d === 1 ? '' : 's'} ago`
}

/** The confirmation shown before a connect or disconnect from the tray: exactly what will change. */
export function confirmText(plan: ConnectPlan, name: string): { message: string; detail: string; button: string } {
  const connect = plan.action === 'connect'
  const lines: string[] = []
  for (const c of plan.changes) {
    lines.push(`${c.file}${c.create ? ' (created)' : c.remove ? ' (removed)' : ''}:`)
    for (const s of c.settings) lines.push(`  ${s.key}: ${s.from ?? '(not set)'} → ${s.to ?? '(not set)'}`)
  }
  for (const n of plan.notes) lines.push(n)
  return {
    message: connect ? `Point ${name} at Burnrate (${plan.url})?` : `Disconnect ${name} from Burnrate?`,
    detail:
      (lines.length ? lines.join('\n') : 'Nothing to change.') +
      (connect ? '\n\nA backup is kept; Disconnect puts the file back as it was.' : ''),
    button: connect ? 'Connect' : 'Disconnect',
  }
}

/**
 * "Start at login" is turned on for the person once, when the first agent gets connected: an
 * agent pointed at Burnrate fails while Burnrate is not running. Turned off by hand later, it
 * stays off (`alreadyOffered`).
 */
export function shouldEnableLogin(o: { connected: number; loginEnabled: boolean; alreadyOffered: boolean }): boolean {
  return o.connected > 0 && !o.loginEnabled && !o.alreadyOffered
}

export type QuitChoice = 'disconnect' | 'keep-server' | 'quit' | 'cancel'

/** The question asked on quit while agents point at this Burnrate; the buttons map to QuitChoice in order. */
export function quitQuestion(names: readonly string[], url: string): { message: string; detail: string; buttons: string[]; choices: QuitChoice[] } {
  const list = names.join(', ')
  return {
    message: `${names.length === 1 ? `${list} points` : `${names.length} agents point`} at Burnrate`,
    detail:
      `${names.length === 1 ? '' : `${list}. `}While Burnrate is not running, their calls to ${url} fail with "connection refused".\n\n` +
      '• Disconnect: their settings are put back as they were before, then Burnrate quits.\n' +
      '• Keep a server running: a minimal Burnrate without a window keeps metering on the same port (stop it with "burnrate disconnect --all" or by opening the app again).\n' +
      '• Quit anyway: the agents fail until Burnrate runs again.',
    buttons: ['Disconnect and quit', 'Keep a server running', 'Quit anyway', 'Cancel'],
    choices: ['disconnect', 'keep-server', 'quit', 'cancel'],
  }
}

/**
 * Asked after "Disconnect and quit" when some agents' settings could not be put back (a file made
 * read-only, a folder gone): quitting now would leave them pointing at a Burnrate that stopped.
 */
export function notRestoredQuestion(failures: readonly { name: string; error: string }[], url: string): { message: string; detail: string; buttons: string[]; choices: QuitChoice[] } {
  return {
    message: `Not every agent could be disconnected`,
    detail:
      failures.map((f) => `${f.name}: ${f.error}`).join('\n') +
      `\n\n${failures.length === 1 ? 'It still points' : 'They still point'} at ${url}: while Burnrate is not running, ${failures.length === 1 ? 'its' : 'their'} calls fail with "connection refused".\n\n` +
      '• Keep a server running: a minimal Burnrate without a window keeps metering on the same port.\n' +
      '• Quit anyway: the agents fail until Burnrate runs again.\n' +
      '• Cancel: Burnrate keeps running; fix the file and quit again.',
    buttons: ['Keep a server running', 'Quit anyway', 'Cancel'],
    choices: ['keep-server', 'quit', 'cancel'],
  }
}

/** 127.x.x.x, ::1 and `localhost` (and its subdomains): this machine. */
function isLoopbackHost(hostname: string): boolean {
  const h = hostname.replace(/^\[|\]$/g, '').toLowerCase()
  if (h === 'localhost' || h.endsWith('.localhost') || h === '::1') return true
  return /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h)
}

/**
 * The connected agents that point at this app's own Burnrate (`url`): their record names its
 * address, or this machine under another loopback name at its port. With `server.host:
 * localhost` the app serves http://127.0.0.1:8787 while `burnrate connect`, reading the same
 * config, points agents at http://localhost:8787: the same Burnrate, and they fail once it quits.
 */
export function agentsHere<T extends { agent: string; url: string }>(connected: readonly T[], url: string): T[] {
  const here = new URL(url)
  return connected.filter((c) => {
    if (c.url === url) return true
    let u: URL
    try {
      u = new URL(c.url)
    } catch {
      return false
    }
    return u.protocol === here.protocol && isLoopbackHost(u.hostname) && isLoopbackHost(here.hostname) && (u.pathname === '/' || u.pathname === '') && u.port === here.port
  })
}

/**
 * The connected agents that point at this app's own Burnrate at an old port: their record (in this
 * data folder) names plain http on this machine, no path, and another port than `url`'s, as the
 * app's own address does when it had to start elsewhere. An agent pointed at another Burnrate
 * (`burnrate connect codex --url https://team-server`) works without this one: it is not this
 * app at another port, and moving it here would stop its calls reaching that server.
 */
export function movedAgents<T extends { agent: string; url: string }>(connected: readonly T[], url: string): T[] {
  const here = new URL(url)
  return connected.filter((c) => {
    let u: URL
    try {
      u = new URL(c.url)
    } catch {
      return false
    }
    return u.protocol === 'http:' && here.protocol === 'http:' && isLoopbackHost(u.hostname) && (u.pathname === '/' || u.pathname === '') && u.port !== here.port
  })
}

/** The notification when Burnrate had to start on another port than the one connected agents use. */
export function movedNotice(names: readonly string[], oldUrls: readonly string[], url: string): { title: string; body: string } {
  return {
    title: 'Agents point at another port',
    body: `${names.join(', ')} ${names.length === 1 ? 'points' : 'point'} at ${[...new Set(oldUrls)].join(', ')}, but Burnrate runs on ${url} now. Click to re-point ${names.length === 1 ? 'it' : 'them'} here.`,
  }
}

export interface HeadlessCommand {
  command: string
  args: string[]
  env: NodeJS.ProcessEnv
}

/**
 * How to start the minimal headless server the app leaves running on quit: the app's own
 * executable as Node (ELECTRON_RUN_AS_NODE) running the bundled out/main/cli.js, on the same
 * data folder, config and port, and the system's proxy the app's server used (`systemProxy`).
 */
export function headlessCommand(o: {
  execPath: string
  cliJs: string
  dataDir: string
  configFile: string | null
  port: number
  env: NodeJS.ProcessEnv
  systemProxy?: Pick<SystemNetwork, 'proxy' | 'direct'> | null
}): HeadlessCommand {
  const args = [o.cliJs, 'serve', '--data-dir', o.dataDir, '--port', String(o.port)]
  if (o.configFile) args.push('--config', o.configFile)
  const proxy = o.systemProxy ? proxyEnv(o.systemProxy, o.env) : {}
  return { command: o.execPath, args, env: { ...o.env, ...proxy, ELECTRON_RUN_AS_NODE: '1' } }
}
