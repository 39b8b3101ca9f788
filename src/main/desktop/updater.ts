import { app } from 'electron'
import { UPDATE_CHECK_INTERVAL_MS, updatesEnabled } from '../desktop-logic/updates'
import type { Logger } from '../log'

/**
 * electron-updater against the feed in electron-builder.yml's `publish` (GitHub releases):
 * downloads a newer version in the background and installs it when the app quits, with the
 * system notification electron-updater shows. Off in development and with BURNRATE_AUTO_UPDATE=0.
 * Loaded only when enabled, so development and tests never load it.
 */
export async function startAutoUpdate(env: NodeJS.ProcessEnv, log: Logger): Promise<(() => void) | null> {
  if (!updatesEnabled({ isPackaged: app.isPackaged, env })) return null
  const { default: updater } = await import('electron-updater')
  const { autoUpdater } = updater
  autoUpdater.logger = { info: (m: unknown) => log.info(`update: ${m}`), warn: (m: unknown) => log.warn(`update: ${m}`), error: (m: unknown) => log.error(`update: ${m}`), debug: () => {} }
  const check = () => void autoUpdater.checkForUpdatesAndNotify().catch((err: Error) => log.warn(`update check failed: ${err.message}`))
  check()
  const timer = setInterval(check, UPDATE_CHECK_INTERVAL_MS)
  timer.unref()
  return () => clearInterval(timer)
}
