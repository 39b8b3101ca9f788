import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { runCli } from '../../src/main/cli/program'
import { makeCall } from '../dashboard/seed'
import { type TestServer, startTestServer } from '../support/server'

/**
 * `burnrate export` through a running server prints the bytes the export API sends (a JSON's with
 * a last line break after them): names in any script (a CJK session, an accented project, an
 * emoji agent) are whole however the network cuts the answer into chunks.
 */
let t: TestServer
const now = Date.now()
const N = 6000

beforeAll(async () => {
  t = await startTestServer({ timezone: 'UTC' })
  for (let i = 0; i < N; i++) {
    t.server.ledger.record(
      makeCall({ ts: now - 3_600_000 + i * 100, session: `会话-日本語-セッション-${i}`, agent: `🤖agent-é${i % 7}`, tenant: 'façade', cost_usd: 0.001 }),
    )
  }
  await t.server.ledger.flushed()
}, 120_000)
afterAll(async () => {
  await t.cleanup()
})

/** `burnrate export` against the server; the bytes it wrote to stdout. */
async function exportBytes(format: string): Promise<{ code: number; bytes: Buffer }> {
  const parts: Buffer[] = []
  const stdout = process.stdout.write
  process.stdout.write = ((s: string | Uint8Array) => (parts.push(typeof s === 'string' ? Buffer.from(s) : Buffer.from(s)), true)) as typeof process.stdout.write
  try {
    const code = await runCli(['export', '--url', t.url, '--config', t.configFile, '--data-dir', t.dir, '--format', format])
    return { code, bytes: Buffer.concat(parts) }
  } finally {
    process.stdout.write = stdout
  }
}

describe('burnrate export over HTTP', () => {
  for (const format of ['csv', 'json']) {
    it(`prints the ${format} the API sends, byte for byte`, async () => {
      const api = Buffer.from(await (await fetch(`${t.url}/api/dashboard/export?format=${format}&since=1970-01-01`)).arrayBuffer())
      expect(api.length).toBeGreaterThan(512 * 1024)
      const r = await exportBytes(format)
      expect(r.code).toBe(0)
      expect(r.bytes.includes(Buffer.from('\uFFFD'))).toBe(false)
      // The JSON with the last line break a file or terminal gets (as `--local` prints it).
      expect(r.bytes.equals(format === 'json' ? Buffer.concat([api, Buffer.from('\n')]) : api)).toBe(true)
    }, 60_000)
  }
})
