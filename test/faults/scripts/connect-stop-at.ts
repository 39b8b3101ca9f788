/**
 * Spawned by ../connect-lock-takeover.test.ts and ../connect-saved-at-rename.test.ts (bundled first): one connect, stopped (SIGSTOP, after
 * saying "stopped" on stderr) right after the first file operation `stopAt` names returns, until
 * the test lets it go on (SIGCONT). Exits 0 when the connect was made; a refusal is thrown (exit 1,
 * its message on stderr).
 * argv: home dataDir agent url stopAtJson({ op, path, under?, prefix? }: `path` the operation's path, with `under` a folder it is in, with `prefix` the start of it) envJson
 */
import fs from 'node:fs'
import { syncBuiltinESMExports } from 'node:module'
import { sep } from 'node:path'
import { AgentConnections } from '../../../src/main/connect/connections'

const [home, dataDir, agent, url, stopAtJson, envJson] = process.argv.slice(2)
const stopAt = JSON.parse(stopAtJson) as { op: string; path: string; under?: boolean; prefix?: boolean }
let stopped = false
const fsx = fs as unknown as Record<string, (...args: unknown[]) => unknown>
const orig = fsx[stopAt.op]
fsx[stopAt.op] = function (this: unknown, ...args: unknown[]) {
  const r = orig.apply(this, args)
  const path = String(args[0])
  const matches = stopAt.prefix ? path.startsWith(stopAt.path) : stopAt.under ? path.startsWith(stopAt.path + sep) || path === stopAt.path : path === stopAt.path
  if (!stopped && matches) {
    stopped = true
    fs.writeSync(2, 'stopped\n')
    process.kill(process.pid, 'SIGSTOP')
  }
  return r
}
syncBuiltinESMExports()

new AgentConnections({ home, dataDir, platform: 'linux', env: JSON.parse(envJson) }).connect(agent, url)
