import type { TrayView } from './tray-view'

/** What a tray menu item does; the Electron adapter maps these to handlers. */
export type TrayAction = 'open-dashboard' | 'open-in-browser' | 'copy-agent-setup' | 'toggle-login' | 'quit'

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
}

/** The tray menu: today's spend first (disabled), budget state, then the actions. */
export function trayMenu({ view, startAtLogin, attachedTo }: TrayMenuInput): TrayMenuItem[] {
  const items: TrayMenuItem[] = [{ type: 'label', label: view.headline }]
  if (view.budgetLine) items.push({ type: 'label', label: view.budgetLine })
  if (attachedTo) items.push({ type: 'label', label: `Attached to the Burnrate at ${attachedTo}` })
  items.push(
    { type: 'separator' },
    { type: 'action', label: 'Open dashboard', action: 'open-dashboard' },
    { type: 'action', label: 'Open in browser', action: 'open-in-browser' },
    { type: 'action', label: 'Copy agent setup', action: 'copy-agent-setup' },
    { type: 'separator' },
    { type: 'checkbox', label: 'Start at login', action: 'toggle-login', checked: startAtLogin },
    { type: 'separator' },
    { type: 'action', label: 'Quit Burnrate', action: 'quit' },
  )
  return items
}
