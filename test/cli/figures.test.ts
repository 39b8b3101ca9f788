import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { usd } from '../../src/main/cli/output'
import { runCli } from '../../src/main/cli/program'
import { makeCall } from '../dashboard/seed'
import { request } from '../support/http'
import { type TestServer, startTestServer } from '../support/server'

/**
 * The figures `burnrate status` and `burnrate report` print, against a real server on 127.0.0.1
 * with its SQLite ledger: each must say what the HTTP API says for the same data.
 */
let t: TestServer
const now = Date.now()

async function cli(...args: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = ''
  let err = ''
  const stdout = process.stdout.write
  const stderr = process.stderr.write
  process.stdout.write = ((s: string) => ((out += s), true)) as typeof process.stdout.write
  process.stderr.write = ((s: string) => ((err += s), true)) as typeof process.stderr.write
  try {
    const code = await runCli([...args, '--url', t.url, '--config', t.configFile, '--data-dir', t.dir])
    return { code, out, err }
  } finally {
    process.stdout.write = stdout
    process.stderr.write = stderr
  }
}

beforeAll(async () => {
  t = await startTestServer({ timezone: 'UTC' })
  // A day of small calls on a cheap model: real money, each well under a hundredth of a cent.
  t.server.ledger.record(makeCall({ ts: now - 60_000, tenant: 'tiny', cost_usd: 0.000_04 }))
  await t.server.ledger.flushed()
})
afterAll(async () => {
  await t.cleanup()
})

describe('money in the CLI', () => {
  it('`status` never prints a real spend under a cent as $0.0000', async () => {
    const api = (await request(`${t.url}/api/dashboard/summary?tenant=tiny`)).json() as { today_spend_usd: number }
    expect(api.today_spend_usd).toBeCloseTo(0.000_04, 15)
    const r = await cli('status', '--tenant', 'tiny')
    expect(r.code, r.err).toBe(0)
    expect(r.out).toMatch(/^Today {7}\$0\.00004 in 1 calls/m)
    expect(r.out).toMatch(/^This month {2}\$0\.00004$/m)
  })

  it('`report` shows the same amount in its row and its total', async () => {
    const r = await cli('report', 'model', '--tenant', 'tiny')
    expect(r.code, r.err).toBe(0)
    expect(r.out).not.toContain('$0.0000 ')
    expect(r.out).toMatch(/gpt-4o-mini .*\$0\.00004 /)
    expect(r.out).toMatch(/Total .*\$0\.00004 /)
  })
})

describe('usd (the CLI money column)', () => {
  it('keeps amounts under a cent to two significant digits, the sign in front, thousands grouped', () => {
    expect(usd(0)).toBe('$0.00')
    expect(usd(-0)).toBe('$0.00')
    expect(usd(0.000_04)).toBe('$0.00004')
    expect(usd(0.004_213_579)).toBe('$0.0042')
    expect(usd(0.009_99)).toBe('$0.01')
    expect(usd(-0.005)).toBe('-$0.005')
    expect(usd(12.345)).toBe('$12.35')
    expect(usd(1_234_567.891)).toBe('$1,234,567.89')
    expect(usd(Number.NaN)).toBe('—')
  })
})
