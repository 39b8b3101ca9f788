import { spawn } from 'node:child_process'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ROOT } from '../e2e/browser'
import { makeCall } from '../dashboard/seed'
import { eventually } from '../support/http'
import { type TestServer, startTestServer } from '../support/server'
import { createLogger } from '../../src/main/log'

/**
 * `burnrate export | less` through a running server, the pager left on its first screen: a
 * Burnrate ends an export whose reader takes none of its bytes for `dashboard.export_stall_ms`
 * (a minute by default; here 1.5 s), cutting the transfer. The built CLI printed
 * `burnrate: terminated` (undici's word for a body cut short): nothing named the server, that the
 * output is incomplete, or why. It now says so in one line, naming the server and the limit, and
 * exits 1.
 */
const CLI = join(ROOT, 'out/main/cli.js')
const N = 40_000
let t: TestServer
const lines: string[] = []
const now = Date.now()

beforeAll(async () => {
  const log = createLogger('info', (l) => lines.push(l))
  t = await startTestServer({ timezone: 'UTC', dashboard: { export_stall_ms: 1500 } }, undefined, undefined, { log })
  for (let i = 0; i < N; i++) t.server.ledger.record(makeCall({ ts: now - 3_600_000 + i * 50, session: `s-${i}`, cost_usd: 0.001 }))
  await t.server.ledger.flushed()
}, 120_000)
afterAll(async () => {
  await t.cleanup()
})

describe('burnrate export through a server that ends it mid-transfer', () => {
  it('says the export was cut short, naming the server and why, and exits 1', async () => {
    const child = spawn(process.execPath, [CLI, 'export', '--url', t.url, '--config', t.configFile, '--data-dir', t.dir], {
      env: { ...process.env, NO_COLOR: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    // The reader takes nothing (a pager on its first screen) until the server has ended the export.
    child.stdout!.pause()
    let stderr = ''
    child.stderr!.on('data', (d: Buffer) => (stderr += d))
    const exited = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)))
    await eventually(() => lines.some((l) => l.includes('export stalled')), 60_000)
    let bytes = 0
    child.stdout!.on('data', (d: Buffer) => (bytes += d.length))
    child.stdout!.resume()
    const code = await exited
    expect(bytes).toBeGreaterThan(0)
    expect(stderr).not.toContain('    at ')
    expect(stderr.trim().split('\n')).toHaveLength(1)
    expect(stderr).toContain(`burnrate: the export from ${t.url} ended before its last byte`)
    expect(stderr).toContain('incomplete')
    expect(stderr).toContain('dashboard.export_stall_ms')
    expect(code).toBe(1)
  }, 90_000)
})
