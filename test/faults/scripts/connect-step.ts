/**
 * Spawned by ../connect-crash.test.ts (bundled first): one connect or disconnect, killed with
 * SIGKILL right after its Nth change to the disk (a write, a rename, a removal, a folder made), as
 * a crash there would leave things. Counts every such change, and says on stdout how many there
 * were when it was not killed (a negative N: stopped there, SIGSTOP, until the test lets it go on), with each file operation in order (to check the fsyncs).
 * argv: home dataDir op(connect|disconnect) agent url killAfter envJson [now: an ISO time its clock stands still at]
 */
import fs from 'node:fs'
import { syncBuiltinESMExports } from 'node:module'
import { AgentConnections } from '../../../src/main/connect/connections'

const [home, dataDir, op, agent, url, killAfterText, envJson, nowText] = process.argv.slice(2)
const killAfter = Number(killAfterText)
const CHANGES = new Set(['writeFileSync', 'writeSync', 'renameSync', 'rmSync', 'unlinkSync', 'rmdirSync', 'mkdirSync', 'linkSync', 'copyFileSync'])
const SEEN = [...CHANGES, 'openSync', 'fsyncSync', 'closeSync']
let changes = 0
const ops: { op: string; path: string }[] = []
const fdPath = new Map<number, string>()
const fsx = fs as unknown as Record<string, (...args: unknown[]) => unknown>
for (const name of SEEN) {
  const orig = fsx[name]
  fsx[name] = function (this: unknown, ...args: unknown[]) {
    const r = orig.apply(this, args)
    if (name === 'openSync') fdPath.set(r as number, String(args[0]))
    const first = args[0]
    ops.push({ op: name, path: typeof first === 'number' ? (fdPath.get(first) ?? `fd ${first}`) : String(first) })
    if (CHANGES.has(name) && ++changes === Math.abs(killAfter)) {
      // A negative count stops it there instead (SIGSTOP), after saying so on stderr, until SIGCONT.
      if (killAfter < 0) {
        fs.writeSync(2, 'stopped\n')
        process.kill(process.pid, 'SIGSTOP')
      } else process.kill(process.pid, 'SIGKILL')
    }
    return r
  }
}
syncBuiltinESMExports()

const conn = new AgentConnections({ home, dataDir, platform: 'linux', env: JSON.parse(envJson), ...(nowText ? { now: () => new Date(nowText) } : {}) })
if (op === 'connect') conn.connect(agent, url)
else conn.disconnect(agent)
process.stdout.write(JSON.stringify({ changes, ops }))
