import { homedir } from 'node:os'
import { join } from 'node:path'

export const APP_NAME = 'Burnrate'

/**
 * The operating system's per-user application-data folder for Burnrate, the same one
 * Electron's `app.getPath('userData')` gives the desktop app, so both share one ledger.
 */
export function defaultDataDir(
  platform: NodeJS.Platform = process.platform,
  env: NodeJS.ProcessEnv = process.env,
  home: string = homedir(),
): string {
  if (platform === 'darwin') return join(home, 'Library', 'Application Support', APP_NAME)
  if (platform === 'win32') return join(env.APPDATA || join(home, 'AppData', 'Roaming'), APP_NAME)
  return join(env.XDG_CONFIG_HOME || join(home, '.config'), APP_NAME)
}

export const DB_FILE = 'burnrate.db'
export const CONFIG_FILE = 'config.yaml'
