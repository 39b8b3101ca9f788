/* global process */
// Loaded with --import by test/faults/locks-without-links.test.ts, connect-lock-takeover.test.ts and
// data-folder-lock-race.test.ts (never in production): hard links cannot be made in the data
// folder (BURNRATE_TEST_LINK_DIR), as on a FAT32 or exFAT drive, where link() fails with the code
// BURNRATE_TEST_LINK_ERROR: EPERM on Linux; EISDIR on Windows (libuv's name for
// ERROR_INVALID_FUNCTION, what CreateHardLink gives there).
import fs from 'node:fs'
import { syncBuiltinESMExports } from 'node:module'

const code = process.env.BURNRATE_TEST_LINK_ERROR
const dir = process.env.BURNRATE_TEST_LINK_DIR
if (code && dir) {
  const real = fs.linkSync
  fs.linkSync = function (from, to, ...rest) {
    if (String(to).startsWith(dir)) throw Object.assign(new Error(`${code}: operation not permitted on this file system, link '${from}' -> '${to}'`), { code, syscall: 'link', path: String(from), dest: String(to) })
    return real.call(this, from, to, ...rest)
  }
  syncBuiltinESMExports()
}
