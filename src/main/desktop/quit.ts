import { app } from 'electron'
import type { Logger } from '../log'
import type { AgentControls } from './agents'
import type { MainWindow } from './window'

export interface QuitOptions {
  agents: AgentControls
  window: MainWindow
  /** Stops the tray, notices and the server (calls under way finished, the ledger on disk). */
  shutdown(): Promise<void>
  /** Whether a shutdown has begun (from a quit or from elsewhere). */
  shuttingDown(): boolean
  log: Logger
}

/**
 * Quitting: while agents point here, ask first what becomes of them (disconnect, keep a headless
 * server, or quit anyway); then hold the quit until calls under way finish and the ledger is on
 * disk, and quit for real.
 */
export function holdQuit(o: QuitOptions): void {
  let stopped = false
  let asking = false
  app.on('before-quit', (event) => {
    if (stopped) {
      o.window.allowClose()
      return
    }
    event.preventDefault()
    if (asking || o.shuttingDown()) return
    asking = true
    void o.agents
      .beforeQuit()
      .catch((err: Error) => {
        o.log.error(`quit: ${err.message}`)
        return true
      })
      .then((go) => {
        asking = false
        if (!go) return
        o.window.allowClose()
        return o
          .shutdown()
          .catch((err: Error) => o.log.error(`shutdown: ${err.message}`))
          .finally(() => {
            stopped = true
            app.quit()
          })
      })
  })
}
