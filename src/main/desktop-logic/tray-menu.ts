import { type TrayAgent, ago } from './agents'
import type { TrayView } from './tray-view'

/** What a tray menu item does; the Electron adapter maps these to handlers. */
export type TrayAction =
  | 'open-dashboard'
  | 'open-in-browser'
  | 'copy-agent-setup'
  | 'toggle-login'
  | 'quit'
  | 'disconnect-all'
  /** Connects or disconnects one agent (after showing the change). */
  | `toggle-agent:${string}`

export type TrayMenuItem =
  | { type: 'separator' }
  | { type: 'label'; label: string }
  | { type: 'action'; label: string; action: TrayAction }
  | { type: 'checkbox'; label: string; action: TrayAction; checked: boolean }

export interface TrayMenuInput {
  view: TrayView
  startAtLogin: boolean
  /** Set when this app attached to another Burnrate instead of running its own server. */
  attachedTo: string | null
  /** The agents Burnrate can connect (installed or connected ones are listed). */
  agents?: readonly TrayAgent[]
  now?: number
}

/** The tray menu: today's spend first (disabled), its calls of no known price, budget state, then the actions. */
export function trayMenu({ view, startAtLogin, attachedTo, agents = [], now = Date.now() }: TrayMenuInput): TrayMenuItem[] {
  const items: TrayMenuItem[] = [{ type: 'label', label: view.headline }]
  if (view.unpricedLine) items.push({ type: 'label', label: view.unpricedLine })
  if (view.budgetLine) items.push({ type: 'label', label: view.budgetLine })
  if (attachedTo) items.push({ type: 'label', label: `Attached to the Burnrate at ${attachedTo}` })
  items.push(
    { type: 'separator' },
    { type: 'action', label: 'Open dashboard', action: 'open-dashboard' },
    { type: 'action', label: 'Open in browser', action: 'open-in-browser' },
    { type: 'action', label: 'Copy agent setup', action: 'copy-agent-setup' },
    { type: 'separator' },
  )
  const shown = agents.filter((a) => a.installed || a.connected)
  if (shown.length) {
    items.push({ type: 'label', label: 'Connect agents' })
    for (const a of shown) {
      items.push({ type: 'checkbox', label: a.name, action: `toggle-agent:${a.agent}`, checked: a.connected })
      // Whether a connected agent's calls are arriving.
      if (a.connected && a.lastCallAt !== undefined) items.push({ type: 'label', label: `    last call: ${a.lastCallAt === null ? 'none yet' : ago(a.lastCallAt, now)}` })
    }
    if (shown.some((a) => a.connected)) items.push({ type: 'action', label: 'Disconnect all agents', action: 'disconnect-all' })
    items.push({ type: 'separator' })
  }
  items.push(
    { type: 'checkbox', label: 'Start at login', action: 'toggle-login', checked: startAtLogin },
    { type: 'separator' },
    { type: 'action', label: 'Quit Burnrate', action: 'quit' },
  )
  return items
}
