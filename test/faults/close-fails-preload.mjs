/* global process, URL */
// Loaded into the built server with --import by test/faults/stop-step-exit.test.ts (never in
// production): once a stop's signal has come, the first close of a handle on the ledger file
// closes it and then throws, as a stop step that fails after doing its work.
import { createRequire } from 'node:module'
import { isMainThread } from 'node:worker_threads'

if (isMainThread) {
  const Database = createRequire(new URL('../../package.json', import.meta.url))('better-sqlite3')
  const close = Database.prototype.close
  let armed = false
  let thrown = false
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, () => (armed = true))
  Database.prototype.close = function (...args) {
    const r = close.apply(this, args)
    if (armed && !thrown && String(this.name).endsWith('burnrate.db')) {
      thrown = true
      throw new Error('closing the ledger file failed (test)')
    }
    return r
  }
}
