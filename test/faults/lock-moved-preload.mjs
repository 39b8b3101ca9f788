/* global process */
// Loaded into the built server with --import by test/faults/data-folder-lock-three.test.ts (never
// in production): pauses its claim of the data folder twice, each time until the test lets it go
// on, so other Burnrates can be started in between, as ones started at the same moment could be:
//   before server.lock (found stale) is moved aside: writes `<BURNRATE_TEST_LOCK_GATE>.paused`, goes on once `<gate>` exists
//   right after it is moved aside:                   writes `<gate>.moved`, goes on once `<gate>.2` exists
import fs from 'node:fs'
import { syncBuiltinESMExports } from 'node:module'
import { basename } from 'node:path'

const gate = process.env.BURNRATE_TEST_LOCK_GATE
const nap = new Int32Array(new SharedArrayBuffer(4))
function pause(said, until) {
  fs.writeFileSync(said, '')
  while (!fs.existsSync(until)) Atomics.wait(nap, 0, 0, 20)
}

let moved = false
if (gate) {
  const real = fs.renameSync
  fs.renameSync = function (from, ...rest) {
    const first = !moved && basename(String(from)) === 'server.lock'
    if (first) pause(`${gate}.paused`, gate)
    const r = real.call(this, from, ...rest)
    if (first) {
      moved = true
      pause(`${gate}.moved`, `${gate}.2`)
    }
    return r
  }
  syncBuiltinESMExports()
}
