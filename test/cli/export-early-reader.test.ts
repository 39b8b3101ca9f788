import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ROOT } from '../e2e/browser'
import { makeCall } from '../dashboard/seed'
import { pipedIntoHead } from '../support/cli'
import { type TestServer, startTestServer } from '../support/server'

/**
 * `burnrate export | head -1`: the reader takes one line and exits while the export still has
 * megabytes to write. The built CLI, in its own process with its stdout a pipe into a real
 * `head -1`, stops as `seq 1 1000000 | head -1` does: exit status 0 and nothing on stderr (a
 * closed pipe is not an error to report, nor a stack trace), and it does not hang.
 * (On PostgreSQL, that it gives its snapshot back: test/postgres/cli-export-early-reader.test.ts.)
 */
const CLI = join(ROOT, 'out/main/cli.js')
let t: TestServer
const now = Date.now()
/** Megabytes in either format: far past a pipe's buffer (64 KiB). */
const N = 20_000

beforeAll(async () => {
  t = await startTestServer({ timezone: 'UTC' })
  for (let i = 0; i < N; i++) t.server.ledger.record(makeCall({ ts: now - 3_600_000 + i * 100, session: `s-${i}`, cost_usd: 0.001 }))
  await t.server.ledger.flushed()
}, 120_000)
afterAll(async () => {
  await t.cleanup()
})

const FIRST_LINE = { csv: /^id,t,provider,/, json: /^\{/ }

describe('burnrate export into a reader that closes early (| head -1)', () => {
  for (const format of ['csv', 'json'] as const) {
    it(`through a running server (${format}): exits 0 and says nothing`, async () => {
      const r = await pipedIntoHead(CLI, ['export', '--url', t.url, '--config', t.configFile, '--data-dir', t.dir, '--format', format])
      expect(r).toEqual({ status: 0, signal: null, stderr: '', line: expect.stringMatching(FIRST_LINE[format]) })
    }, 60_000)

    it(`from the ledger file, --local (${format}): exits 0 and says nothing`, async () => {
      const r = await pipedIntoHead(CLI, ['export', '--local', '--config', t.configFile, '--data-dir', t.dir, '--format', format])
      expect(r).toEqual({ status: 0, signal: null, stderr: '', line: expect.stringMatching(FIRST_LINE[format]) })
    }, 60_000)
  }
})
