import { Menu, Tray, type MenuItemConstructorOptions, type NativeImage } from 'electron'
import type { BudgetLevel } from '../budgets/types'
import type { TrayAgent } from '../desktop-logic/agents'
import { type TrayAction, trayMenu } from '../desktop-logic/tray-menu'
import type { TrayView } from '../desktop-logic/tray-view'

export interface TrayOptions {
  platform: NodeJS.Platform
  icons: Record<BudgetLevel, NativeImage>
  attachedTo: string | null
  startAtLogin(): boolean
  /** The agents for the menu's "Connect agents" section. */
  agents?(): TrayAgent[]
  act(action: TrayAction): void
}

export interface TrayHandle {
  readonly tray: Tray
  render(view: TrayView): void
  /** Rebuilds the menu with the current view (after "Start at login" changed). */
  refreshMenu(): void
  destroy(): void
}

/** The Electron side of the tray: copies a TrayView onto the Tray and its menu. */
export function createTray(opts: TrayOptions): TrayHandle {
  const tray = new Tray(opts.icons.ok)
  let current: TrayView | null = null
  let icon: BudgetLevel = 'ok'
  // Windows: a click on the icon opens the dashboard (the menu is on right-click).
  if (opts.platform === 'win32') tray.on('click', () => opts.act('open-dashboard'))

  const buildMenu = (view: TrayView) => {
    const template: MenuItemConstructorOptions[] = trayMenu({ view, startAtLogin: opts.startAtLogin(), attachedTo: opts.attachedTo, agents: opts.agents?.() ?? [] }).map(
      (item) => {
        switch (item.type) {
          case 'separator':
            return { type: 'separator' }
          case 'label':
            return { label: item.label, enabled: false }
          case 'action':
            return { label: item.label, click: () => opts.act(item.action) }
          case 'checkbox':
            return { label: item.label, type: 'checkbox', checked: item.checked, click: () => opts.act(item.action) }
        }
      },
    )
    tray.setContextMenu(Menu.buildFromTemplate(template))
  }

  return {
    tray,
    render(view) {
      current = view
      if (view.icon !== icon) {
        icon = view.icon
        tray.setImage(opts.icons[icon])
      }
      if (opts.platform === 'darwin') tray.setTitle(view.title, { fontType: 'monospacedDigit' })
      tray.setToolTip(view.tooltip)
      buildMenu(view)
    },
    refreshMenu() {
      if (current && !tray.isDestroyed()) buildMenu(current)
    },
    destroy() {
      if (!tray.isDestroyed()) tray.destroy()
      current = null
    },
  }
}
