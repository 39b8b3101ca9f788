import { type ChildProcess, spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { afterEach, describe, expect, it } from 'vitest'
import { startTestServer } from '../support/server'

/**
 * Another user of the machine may listen on Burnrate's address while it is stopped (after a
 * reboot, before Burnrate starts). Burnrate cannot start there, and the agents connected to it
 * send that program their calls and API keys. Start-up said only that the address was in use, and
 * suggested another port, which leaves the agents sending them there without a word.
 */
const asNobody = process.platform === 'linux' && process.getuid?.() === 0 && existsSync('/usr/bin/node')

const children: ChildProcess[] = []
afterEach(() => {
  for (const c of children.splice(0)) c.kill()
})

/** A program of `nobody` listening on 127.0.0.1 (a free port); resolves with the port. */
function squatter(): Promise<number> {
  const code = `const s = require('http').createServer((q, r) => r.end('{}')).listen(0, '127.0.0.1', () => console.log(s.address().port))`
  const proc = spawn('/usr/bin/node', ['-e', code], { uid: 65534, gid: 65534, cwd: '/', stdio: ['ignore', 'pipe', 'inherit'] })
  children.push(proc)
  return new Promise((resolve, reject) => {
    proc.stdout!.once('data', (d) => resolve(Number(String(d).trim())))
    proc.once('exit', (c) => reject(new Error(`the squatter exited (${c})`)))
  })
}

describe("another user's program on Burnrate's address at start", () => {
  it.runIf(asNobody)('stops start-up saying whose it is and that the agents pointed there send it their keys', async () => {
    const port = await squatter()
    const err = await startTestServer({ server: { host: '127.0.0.1', port } }).then(
      async (t) => {
        await t.cleanup()
        return null
      },
      (e: Error) => e,
    )
    expect(err?.name).toBe('StartupError')
    expect(err?.message).toContain(`127.0.0.1:${port} is taken by another user's program (uid 65534)`)
    expect(err?.message).toMatch(/API keys/)
  })
})
