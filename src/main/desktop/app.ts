import { BrowserWindow, app } from 'electron'
import { loadConfig } from '../config/load'
import { createBurnrate } from '../server/server'

/**
 * The desktop app: the same server core as the headless entry, with the database in the
 * app's user-data folder, and the dashboard in a native window loaded from that server.
 */
export async function runDesktop(): Promise<void> {
  await app.whenReady()
  const config = loadConfig({ dataDir: process.env.BURNRATE_DATA_DIR || app.getPath('userData') })
  const server = createBurnrate(config)
  const url = await server.listen()
  const win = new BrowserWindow({
    width: 1280,
    height: 860,
    webPreferences: { contextIsolation: true, sandbox: true, nodeIntegration: false },
  })
  await win.loadURL(url)
  app.on('before-quit', () => {
    void server.close()
  })
}
