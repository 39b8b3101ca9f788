import { type ChildProcess, spawn } from 'node:child_process'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, expect, it, vi } from 'vitest'
import { stringify } from 'yaml'
import { silentLogger } from '../../src/main/log'
import { resetElectron, state } from './fake-electron'

vi.mock('electron', () => import('./fake-electron'))
const { startServer } = await import('../../src/main/desktop/start')

/**
 * The kept headless server answers its first health check only once it has loaded its API (a
 * moment after it listens), which on a busy laptop takes longer than a port probe waits. The
 * app must still attach to the Burnrate its data folder's server.lock names, not give up and
 * fail to claim the folder that Burnrate holds ("another Burnrate … serves this data folder").
 */

let dir: string
let holder: ChildProcess | null = null
let slow: http.Server | null = null

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'burnrate-slow-holder-'))
  resetElectron(dir)
})
afterEach(async () => {
  holder?.kill('SIGKILL')
  holder = null
  if (slow) await new Promise((r) => slow!.close(r))
  slow = null
  rmSync(dir, { recursive: true, force: true })
})

it('attaches to the Burnrate holding the data folder though its first health answer takes seconds', async () => {
  slow = http.createServer((req, res) => {
    setTimeout(() => {
      res.setHeader('content-type', 'application/json')
      res.end(JSON.stringify({ status: 'ok', version: '9.9.9', uptime_s: 3 }))
    }, 2500)
  })
  await new Promise<void>((r) => slow!.listen(0, '127.0.0.1', r))
  const url = `http://127.0.0.1:${(slow.address() as AddressInfo).port}`
  // The lock names a live process other than this one (the kept server's), listening at `url`.
  holder = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)'], { stdio: 'ignore' })
  writeFileSync(join(dir, 'server.lock'), `${JSON.stringify({ pid: holder.pid, url, started_at: new Date().toISOString(), claim: 'kept' })}\n`, { mode: 0o600 })
  writeFileSync(join(dir, 'config.yaml'), stringify({ server: { host: '127.0.0.1', port: 0 }, timezone: 'UTC', pricing: { auto_update: false } }))

  const started = await startServer({ dataDir: dir, env: {}, log: silentLogger, home: join(dir, 'home'), platform: 'linux' })
  expect({ attachedTo: started?.attachedTo ?? null, errors: state.errorBoxes.map((b) => b.content) }).toEqual({ attachedTo: url, errors: [] })
}, 30_000)
