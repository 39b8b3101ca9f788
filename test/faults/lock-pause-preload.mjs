/* global process */
// Loaded into the built server with --import by test/faults/data-folder-lock-race.test.ts (never in
// production): pauses the claim of the data folder at one point until the test lets it go on, so a
// second Burnrate can be started in that window, as one started at the same moment could be.
//   BURNRATE_TEST_LOCK_PAUSE=create    once server.lock has been created, before anything is written to it
//   BURNRATE_TEST_LOCK_PAUSE=takeover  before server.lock (found stale) is removed or moved aside
// It writes `<BURNRATE_TEST_LOCK_GATE>.paused` when it pauses, and goes on once `<BURNRATE_TEST_LOCK_GATE>` exists.
import fs from 'node:fs'
import { syncBuiltinESMExports } from 'node:module'
import { basename } from 'node:path'

const mode = process.env.BURNRATE_TEST_LOCK_PAUSE
const gate = process.env.BURNRATE_TEST_LOCK_GATE
let paused = false

function pause() {
  if (paused || !gate) return
  paused = true
  fs.writeFileSync(`${gate}.paused`, '')
  const nap = new Int32Array(new SharedArrayBuffer(4))
  while (!fs.existsSync(gate)) Atomics.wait(nap, 0, 0, 20)
}

const isLock = (p) => basename(String(p)) === 'server.lock'

if (mode === 'create') {
  const openSync = fs.openSync
  fs.openSync = function (path, flags, ...rest) {
    const fd = openSync.call(this, path, flags, ...rest)
    if (isLock(path) && flags === 'wx') pause()
    return fd
  }
}
if (mode === 'takeover') {
  for (const name of ['unlinkSync', 'renameSync']) {
    const real = fs[name]
    fs[name] = function (path, ...rest) {
      if (isLock(path)) pause()
      return real.call(this, path, ...rest)
    }
  }
}
syncBuiltinESMExports()
