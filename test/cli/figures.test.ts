import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { usd } from '../../src/main/cli/output'
import { keyHash, makeCall } from '../dashboard/seed'
import { runCliCaptured } from '../support/cli'
import { request } from '../support/http'
import { type TestServer, startTestServer } from '../support/server'

/**
 * The figures `burnrate status` and `burnrate report` print, against a real server on 127.0.0.1
 * with its SQLite ledger: each must say what the HTTP API says for the same data.
 */
let t: TestServer
const now = Date.now()

/** `burnrate <args>` against the test server; what it printed (stdout and stderr together). */
function cli(...args: string[]): Promise<{ code: number; out: string }> {
  return runCliCaptured(...args, '--url', t.url, '--config', t.configFile, '--data-dir', t.dir)
}

/** `ms` before now, but never before today's UTC midnight: the figures are today's at any hour. */
function recent(ms: number): number {
  return Math.max(now - ms, now - (now % 86_400_000))
}

beforeAll(async () => {
  t = await startTestServer({ timezone: 'UTC', budgets: { rules: [{ api_key_pattern: '*', daily_limit_usd: 10, action: 'warn' }] } })
  // A day of small calls on a cheap model: real money, each well under a hundredth of a cent.
  t.server.ledger.record(makeCall({ ts: recent(60_000), tenant: 'tiny', cost_usd: 0.000_04 }))
  // A key at 99.6% of its $10 daily limit (warn: its calls still go through); 1 call in 2,500 of its tenant's failed.
  const near = { tenant: 'near', api_key_hash: keyHash('sk-near-000000000001'), key_hint: 'sk-…0001' }
  t.server.ledger.record(makeCall({ ts: recent(50_000), ...near, cost_usd: 9.96 }))
  for (let i = 0; i < 2499; i++) t.server.ledger.record(makeCall({ ts: recent(40_000), ...near, cost_usd: 0, status: i === 0 ? 500 : 200 }))
  // A key $0.004 short of its $10 limit: the two amounts differ, so they must not both read $10.00.
  const edge = { tenant: 'edge', api_key_hash: keyHash('sk-edge-000000000003'), key_hint: 'sk-…0003' }
  t.server.ledger.record(makeCall({ ts: recent(30_000), ...edge, cost_usd: 9.996 }))
  // A $10 limit spent to the cent by a hundred $0.10 calls (their float sum is 9.99999999999998): reached.
  const cent = { tenant: 'cent', api_key_hash: keyHash('sk-cent-000000000004'), key_hint: 'sk-…0004' }
  for (let i = 0; i < 100; i++) t.server.ledger.record(makeCall({ ts: recent(20_000), ...cent, cost_usd: 0.1 }))
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
    expect(r.code, r.out).toBe(0)
    expect(r.out).toMatch(/^Today {7}\$0\.00004 in 1 calls/m)
    expect(r.out).toMatch(/^This month {2}\$0\.00004$/m)
  })

  it('`report` shows the same amount in its row and its total', async () => {
    const r = await cli('report', 'model', '--tenant', 'tiny')
    expect(r.code, r.out).toBe(0)
    expect(r.out).not.toContain('$0.0000 ')
    expect(r.out).toMatch(/gpt-4o-mini .*\$0\.00004 /)
    expect(r.out).toMatch(/Total .*\$0\.00004 /)
  })
})

describe('shares in the CLI', () => {
  it("`status` says 99.6% of a budget that is not reached, and a failure rate of 0.04% is not 0.0%", async () => {
    const api = (await request(`${t.url}/api/dashboard/budgets?tenant=near`)).json() as { rules: { windows: { pct: number }[] }[] }
    expect(api.rules[0].windows[0].pct).toBeCloseTo(0.996, 12)
    const summary = (await request(`${t.url}/api/dashboard/summary?tenant=near`)).json() as { error_rate: number }
    expect(summary.error_rate).toBe(1 / 2500)
    const r = await cli('status', '--tenant', 'near')
    expect(r.code, r.out).toBe(0)
    expect(r.out).toMatch(/^ {2}\* \(sk-…0001\) daily: \$9\.96 of \$10\.00 \(99\.6%, projected /m)
    expect(r.out).toMatch(/^Today {7}\$9\.96 in 2,500 calls \(<0\.1% failed\)$/m)
  })
})

describe('budgets in `status`', () => {
  it('a spend $0.004 short of its limit does not read as the limit ("$10.00 of $10.00")', async () => {
    const r = await cli('status', '--tenant', 'edge')
    expect(r.code, r.out).toBe(0)
    expect(r.out).toMatch(/^ {2}\* \(sk-…0003\) daily: \$9\.996 of \$10\.00 \(99\.9%, projected /m)
  })

  it('a limit spent to the cent by a hundred $0.10 calls reads 100%, as the budgets count it reached', async () => {
    const r = await cli('status', '--tenant', 'cent')
    expect(r.code, r.out).toBe(0)
    expect(r.out).toMatch(/^ {2}\* \(sk-…0004\) daily: \$10\.00 of \$10\.00 \(100%, projected /m)
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
