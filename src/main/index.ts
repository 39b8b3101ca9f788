/** The Electron main process entry; everything Electron-specific lives in ./desktop. */
import { runDesktop } from './desktop/app'

void runDesktop().then((desktop) => {
  // Reachable from playwright's electronApp.evaluate() in the smoke test.
  ;(globalThis as { burnrateDesktop?: unknown }).burnrateDesktop = desktop
})
