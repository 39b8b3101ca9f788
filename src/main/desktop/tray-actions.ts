import { app, clipboard, shell } from 'electron'
import { agentSetup } from '../desktop-logic/agent-setup'
import { openInBrowser } from '../desktop-logic/browser-login'
import type { TrayAction } from '../desktop-logic/tray-menu'
import type { Logger } from '../log'
import type { AgentControls } from './agents'
import type { LoginItem } from './login-item'

export interface TrayActionDeps {
  agents: AgentControls
  login: LoginItem
  /** Whether the app starts at login (false when the system cannot say). */
  loginEnabled(): boolean
  openDashboard(): void
  /** The dashboard's address for a browser, made for each opening (a one-time code in its fragment, `/login#login=`, when dashboard.token is set). */
  dashboardUrl: () => string
  /** A folder private to the user (userData): the page that hands the browser that address goes there. */
  userData: string
  /** The proxy's address, for the agent setup lines. */
  url: string
  platform: NodeJS.Platform
  log: Logger
  /** Redraws the tray menu (a check mark changed). */
  refreshMenu(): void
}

/** What each tray menu item does. */
export function trayActions(d: TrayActionDeps): (action: TrayAction) => void {
  return (action) => {
    if (action.startsWith('toggle-agent:')) {
      void d.agents.toggle(action.slice('toggle-agent:'.length)).catch((err: Error) => d.log.error(`agent: ${err.message}`))
      return
    }
    switch (action) {
      case 'disconnect-all':
        void d.agents.disconnectAll()
        break
      case 'open-dashboard':
        d.openDashboard()
        break
      case 'open-in-browser':
        // Never with the code on the browser's command line (../desktop-logic/browser-login.ts).
        try {
          openInBrowser(d.dashboardUrl(), { dir: d.userData, open: (u) => void shell.openExternal(u) })
        } catch (err) {
          d.log.error(`open in browser: ${(err as Error).message}`)
        }
        break
      case 'copy-agent-setup':
        clipboard.writeText(agentSetup(d.url, d.platform))
        break
      case 'toggle-login':
        try {
          d.login.set(!d.loginEnabled())
        } catch (err) {
          d.log.warn(`start at login: ${(err as Error).message}`)
        }
        d.refreshMenu()
        break
      case 'quit':
        app.quit()
        break
    }
  }
}
