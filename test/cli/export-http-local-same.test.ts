import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { runCli } from '../../src/main/cli/program'
import { makeCall } from '../dashboard/seed'
import { type TestServer, startTestServer } from '../support/server'

/**
 * `burnrate export` prints the same bytes whether a running server answers or it reads the ledger
 * file (`--local`), to stdout or into a file (`-o`): a script that saves the export cannot tell,
 * down to the JSON's last line break, which of the two it got.
 */
let t: TestServer
const now = Date.now()
const N = 7000

beforeAll(async () => {
  t = await startTestServer({ timezone: 'UTC' })
  for (let i = 0; i < N; i++) {
    t.server.ledger.record(makeCall({ ts: now - 3_600_000 + i * 100, session: `会话-${i}`, agent: `🤖agent-é${i % 7}`, tenant: i % 2 ? 'façade' : '', cost_usd: 0.001 + i * 1e-7 }))
  }
  await t.server.ledger.flush()
}, 120_000)
afterAll(async () => {
  await t.cleanup()
})

/** `burnrate export <args>`: its exit code and the bytes it wrote to stdout. */
async function exportBytes(...args: string[]): Promise<{ code: number; bytes: Buffer }> {
  const parts: Buffer[] = []
  const stdout = process.stdout.write
  process.stdout.write = ((s: string | Uint8Array) => (parts.push(Buffer.from(s)), true)) as typeof process.stdout.write
  try {
    const code = await runCli(['export', '--config', t.configFile, '--data-dir', t.dir, ...args])
    return { code, bytes: Buffer.concat(parts) }
  } finally {
    process.stdout.write = stdout
  }
}

describe('burnrate export through a server and from the file', () => {
  for (const format of ['csv', 'json']) {
    it(`prints the same ${format}, byte for byte`, async () => {
      const http = await exportBytes('--url', t.url, '--format', format)
      const local = await exportBytes('--local', '--format', format)
      expect({ http: http.code, local: local.code }).toEqual({ http: 0, local: 0 })
      expect(local.bytes.length).toBeGreaterThan(512 * 1024)
      // The last bytes first: a difference at the end reads plainly.
      expect(http.bytes.subarray(-40).toString()).toBe(local.bytes.subarray(-40).toString())
      expect(http.bytes.equals(local.bytes)).toBe(true)
      // And the same into a file (-o).
      const [a, b] = [join(t.dir, `http.${format}`), join(t.dir, `local.${format}`)]
      expect((await exportBytes('--url', t.url, '--format', format, '-o', a)).code).toBe(0)
      expect((await exportBytes('--local', '--format', format, '-o', b)).code).toBe(0)
      expect(readFileSync(a).equals(readFileSync(b))).toBe(true)
      expect(readFileSync(a).equals(local.bytes)).toBe(true)
    }, 60_000)
  }
})
