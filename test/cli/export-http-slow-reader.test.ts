import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { runCli } from '../../src/main/cli/program'
import { makeCall } from '../dashboard/seed'
import { type TestServer, startTestServer } from '../support/server'

/**
 * `burnrate export | less`: the pager holds the pipe while someone reads the first screen. The
 * export through a running server waits for it however long that takes (the server's own limit
 * is `dashboard.export_stall_ms`, a minute by default), and then prints every call.
 */
let t: TestServer
const now = Date.now()
const N = 20_000
/** How long the reader holds the pipe: past the 30 s the CLI gives a server to answer. */
const HOLD_MS = 32_000

beforeAll(async () => {
  t = await startTestServer({ timezone: 'UTC' })
  for (let i = 0; i < N; i++) t.server.ledger.record(makeCall({ ts: now - 3_600_000 + i * 100, session: `s-${i}`, cost_usd: 0.001 }))
  await t.server.ledger.flushed()
}, 120_000)
afterAll(async () => {
  await t.cleanup()
})

describe('burnrate export over HTTP into a pipe held by its reader', () => {
  it('waits for the reader and prints every call', async () => {
    const parts: Buffer[] = []
    let held = false
    const stdout = process.stdout.write
    process.stdout.write = ((s: string | Uint8Array) => {
      parts.push(Buffer.from(s))
      if (held) return true
      // The pipe is full after the first chunk: the reader takes more only after HOLD_MS.
      held = true
      setTimeout(() => process.stdout.emit('drain'), HOLD_MS)
      return false
    }) as typeof process.stdout.write
    const stderr = process.stderr.write
    let err = ''
    process.stderr.write = ((s: string) => ((err += s), true)) as typeof process.stderr.write
    let code: number
    try {
      code = await runCli(['export', '--url', t.url, '--config', t.configFile, '--data-dir', t.dir, '--format', 'csv'])
    } finally {
      process.stdout.write = stdout
      process.stderr.write = stderr
    }
    expect({ code, err }).toEqual({ code: 0, err: '' })
    expect(Buffer.concat(parts).toString().trim().split('\r\n').length - 1).toBe(N)
  }, 90_000)
})
