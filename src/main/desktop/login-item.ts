import { app } from 'electron'
import { HIDDEN_FLAG, autostartFile, isAutostartEnabled, repointAutostart, setAutostart } from '../desktop-logic/autostart'

export interface LoginItem {
  enabled(): boolean
  set(enabled: boolean): void
  /** This launch was the login launch (so the window stays hidden). */
  openedAtLogin(): boolean
}

/** "Start at login": Electron's login items on macOS and Windows, an XDG autostart entry on Linux. */
export function loginItem(platform: NodeJS.Platform, env: NodeJS.ProcessEnv = process.env): LoginItem {
  if (platform === 'linux') {
    const file = autostartFile(env)
    // An AppImage runs from a temporary mount: start the AppImage file itself.
    const exec = env.APPIMAGE || process.execPath
    const args = app.isPackaged ? [] : [app.getAppPath()]
    // An entry left naming an AppImage an update replaced (or a file moved) starts this one.
    try {
      repointAutostart(file, exec, args)
    } catch {
      // the entry stays as it was; the menu shows whether it is on
    }
    return {
      enabled: () => isAutostartEnabled(file),
      set: (on) => setAutostart(file, on, exec, args),
      openedAtLogin: () => false,
    }
  }
  const args = platform === 'win32' ? [HIDDEN_FLAG] : []
  return {
    enabled: () => {
      const s = app.getLoginItemSettings({ args })
      // Windows: an entry turned off in Task Manager's Startup apps keeps its Run key (openAtLogin) but does not start.
      return s.openAtLogin && (platform !== 'win32' || s.executableWillLaunchAtLogin !== false)
    },
    set: (on) => app.setLoginItemSettings({ openAtLogin: on, args }),
    openedAtLogin: () => platform === 'darwin' && app.getLoginItemSettings().wasOpenedAtLogin === true,
  }
}
