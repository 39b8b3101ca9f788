/** The Electron main process entry; everything Electron-specific lives in ./desktop. */
import { runDesktop } from './desktop/app'

// Token estimates are counted on the estimate thread built beside this file.
void runDesktop({ estimateWorker: new URL('./estimate-worker.js', import.meta.url) }).then((desktop) => {
  // Reachable from playwright's electronApp.evaluate() in the smoke test.
  ;(globalThis as { burnrateDesktop?: unknown }).burnrateDesktop = desktop
})
