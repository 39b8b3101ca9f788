import { join } from 'node:path'
import { app, nativeImage, type NativeImage } from 'electron'
import type { BudgetLevel } from '../budgets/types'

/** `resources/` in development; the packaged app's resources folder (electron-builder's extraResources). */
export function resourcesDir(): string {
  return app.isPackaged ? process.resourcesPath : join(app.getAppPath(), 'resources')
}

/** The app icon for the window (Linux and Windows; macOS uses the bundle's). */
export function appIcon(): NativeImage {
  return nativeImage.createFromPath(join(resourcesDir(), 'icon.png'))
}

/**
 * Tray icons per budget state. macOS gets a template image (drawn in the menu bar's own
 * colour) while all is well, and a coloured one when a budget needs attention.
 * Electron picks the `@2x` files on high-density screens.
 */
export function trayIcons(platform: NodeJS.Platform): Record<BudgetLevel, NativeImage> {
  const dir = join(resourcesDir(), 'tray')
  const load = (file: string) => nativeImage.createFromPath(join(dir, file))
  if (platform === 'darwin') {
    const ok = load('trayTemplate.png')
    ok.setTemplateImage(true)
    return { ok, warning: load('tray-warning.png'), blocking: load('tray-blocking.png') }
  }
  return { ok: load('tray-ok.png'), warning: load('tray-warning.png'), blocking: load('tray-blocking.png') }
}
