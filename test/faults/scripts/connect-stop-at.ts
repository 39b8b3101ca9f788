/**
 * Spawned by ../connect-lock-takeover.test.ts, ../connect-lock-three.test.ts and ../connect-saved-at-rename.test.ts (bundled first): one connect, stopped (SIGSTOP, after
 * saying "stopped" on stderr) right after the first file operation `stopAt` names returns, until
 * the test lets it go on (SIGCONT). Exits 0 when the connect was made; a refusal is thrown (exit 1,
 * its message on stderr).
 * argv: home dataDir agent url stopAtJson({ op, path, under?, prefix? }: `path` the operation's path, with `under` a folder it is in, with `prefix` the start of it; or a list of them, stopped at each in turn) envJson
 */
import fs from 'node:fs'
import { syncBuiltinESMExports } from 'node:module'
import { sep } from 'node:path'
import { AgentConnections } from '../../../src/main/connect/connections'

const [home, dataDir, agent, url, stopAtJson, envJson] = process.argv.slice(2)
interface StopAt {
  op: string
  path: string
  under?: boolean
  prefix?: boolean
}
/** Where it stops, in turn: one, or a list (stopped again at the next once let go on). */
const stops = [JSON.parse(stopAtJson) as StopAt | StopAt[]].flat()
const fsx = fs as unknown as Record<string, (...args: unknown[]) => unknown>
for (const op of new Set(stops.map((s) => s.op))) {
  const orig = fsx[op]
  fsx[op] = function (this: unknown, ...args: unknown[]) {
    const r = orig.apply(this, args)
    const path = String(args[0])
    const at = stops[0]
    const matches = at && at.op === op && (at.prefix ? path.startsWith(at.path) : at.under ? path.startsWith(at.path + sep) || path === at.path : path === at.path)
    if (matches) {
      stops.shift()
      fs.writeSync(2, 'stopped\n')
      process.kill(process.pid, 'SIGSTOP')
    }
    return r
  }
}
syncBuiltinESMExports()

new AgentConnections({ home, dataDir, platform: 'linux', env: JSON.parse(envJson) }).connect(agent, url)
