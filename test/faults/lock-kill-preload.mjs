/* global process */
// Loaded into the built server with --import by test/faults/lock-leftovers.test.ts (never in
// production): kills the process (SIGKILL) at one step of its claim of the data folder, as a crash
// there would, leaving what that step made beside server.lock.
//   BURNRATE_TEST_LOCK_KILL=tmp    the lock written whole to a file of its own, before it is linked under its name
//   BURNRATE_TEST_LOCK_KILL=aside  server.lock (found stale) just moved aside, before it is judged
import fs from 'node:fs'
import { syncBuiltinESMExports } from 'node:module'
import { basename } from 'node:path'

const at = process.env.BURNRATE_TEST_LOCK_KILL

if (at === 'tmp') {
  const real = fs.linkSync
  fs.linkSync = function (from, ...rest) {
    if (/^server\.lock\..*\.tmp$/.test(basename(String(from)))) process.kill(process.pid, 'SIGKILL')
    return real.call(this, from, ...rest)
  }
}
if (at === 'aside') {
  const real = fs.renameSync
  fs.renameSync = function (from, ...rest) {
    const r = real.call(this, from, ...rest)
    if (basename(String(from)) === 'server.lock') process.kill(process.pid, 'SIGKILL')
    return r
  }
}
syncBuiltinESMExports()
