import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { execCli } from '../support/cli'
import { ROOT } from '../e2e/browser'
import { makeCall } from '../dashboard/seed'
import { type TestServer, startTestServer } from '../support/server'

/**
 * `--url` that is not an http(s) address. `--url 127.0.0.1:8787` (a host and port, as one types
 * them) said "no Burnrate answers at 127.0.0.1:8787" with exit 1 while one answered there; an
 * empty `--url` (`--url "$BURNRATE_URL"`, the variable unset) was taken as none, so status read
 * the ledger file and said the Burnrate serving the folder "did not answer", though it was never
 * asked. Both are a bad value on the command line: exit 2, one line saying what --url takes
 * (with the address it was probably meant to be), before anything is asked or read.
 */
const CLI = join(ROOT, 'out/main/cli.js')
let t: TestServer

beforeAll(async () => {
  t = await startTestServer({ timezone: 'UTC' })
  t.server.ledger.record(makeCall({ ts: Date.now() - 60_000, cost_usd: 1 }))
  await t.server.ledger.flushed()
})
afterAll(async () => {
  await t.cleanup()
})

function cli(args: string[]): ReturnType<typeof execCli> {
  return execCli(CLI, [...args, '--config', t.configFile, '--data-dir', t.dir], { env: { ...process.env, NO_COLOR: '1', HOME: t.home } })
}

describe('burnrate status, report and export with a --url that is not an http(s) address', () => {
  it('a host and port without http:// is bad usage, naming the address meant', async () => {
    const hostPort = t.url.replace(/^http:\/\//, '')
    for (const cmd of [['status'], ['report', 'daily'], ['export']]) {
      const r = await cli([...cmd, '--url', hostPort])
      expect(r.code, r.stderr).toBe(2)
      expect(r.stdout).toBe('')
      expect(r.stderr).toContain(`--url`)
      expect(r.stderr).toContain(`http://${hostPort}`)
      expect(r.stderr).not.toContain('no Burnrate answers')
    }
  })

  it('an empty --url is bad usage, not the ledger file read in its place', async () => {
    const r = await cli(['status', '--url', ''])
    expect(r.code, r.stdout + r.stderr).toBe(2)
    expect(r.stdout).toBe('')
    expect(r.stderr).toContain('--url')
  })

  it('another scheme is bad usage', async () => {
    const r = await cli(['report', 'daily', '--url', t.url.replace(/^http/, 'ftp')])
    expect(r.code, r.stderr).toBe(2)
  })

  it('an http address with a trailing slash still asks that Burnrate', async () => {
    const r = await cli(['status', '--url', `${t.url}/`])
    expect(r.code, r.stderr).toBe(0)
    expect(r.stdout).toContain(`Burnrate (${t.url})`)
  })
})
