import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { keyHash, makeCall } from '../dashboard/seed'
import { execCli } from '../support/cli'
import { ROOT } from '../e2e/browser'
import { type TestServer, startTestServer } from '../support/server'

/**
 * `burnrate status` printed today's and this month's spend, and each budget window's, as plain
 * amounts where calls of a model with no known price were counted as $0: a key whose spend is
 * unknown read as under its limit. They now carry the dashboard's mark ('$2.00 + 2 unpriced',
 * '$0.00 1 unpriced'), a window's share and projection read 'at least', and a line says what the
 * mark means; --json carries the answers' additive counts. Through the server and from the file
 * (the built CLI, a real SQLite ledger).
 */
const CLI = join(ROOT, 'out/main/cli.js')
let t: TestServer
const now = Date.now()
const today = (ago: number) => Math.max(now - ago, now - (now % 86_400_000))
const A = { api_key_hash: keyHash('sk-unp-aaaa-000000000001'), key_hint: 'sk-…0001' }
const B = { api_key_hash: keyHash('sk-unp-bbbb-000000000002'), key_hint: 'sk-…0002' }

beforeAll(async () => {
  t = await startTestServer({ timezone: 'UTC', budgets: { rules: [{ api_key_pattern: '*', daily_limit_usd: 10, action: 'warn' }] } })
  // Key A: $2 priced and two calls of an unknown model; key B: one call of it only.
  t.server.ledger.record(makeCall({ ts: today(60_000), ...A, cost_usd: 2 }))
  t.server.ledger.record(makeCall({ ts: today(50_000), ...A, model: 'mystery-9000', cost_usd: 0, priced: false }))
  t.server.ledger.record(makeCall({ ts: today(40_000), ...A, model: 'mystery-9000', cost_usd: 0, priced: false }))
  t.server.ledger.record(makeCall({ ts: today(30_000), ...B, model: 'mystery-9000', cost_usd: 0, priced: false }))
  expect(await t.server.ledger.flushed()).toBe(true)
})
afterAll(async () => {
  await t?.cleanup()
})

function cli(...args: string[]): ReturnType<typeof execCli> {
  return execCli(CLI, [...args, '--config', t.configFile, '--data-dir', t.dir], { env: { ...process.env, NO_COLOR: '1', HOME: t.home } })
}

describe('burnrate status with calls of a model that has no price', () => {
  it("marks today's, this month's and each budget window's spend (through the server)", async () => {
    const r = await cli('status', '--url', t.url)
    expect(r.code, r.stderr).toBe(0)
    expect(r.stdout).toMatch(/^Today {7}\$2\.00 \+ 3 unpriced in 4 calls/m)
    expect(r.stdout).toMatch(/^This month {2}\$2\.00 \+ 3 unpriced$/m)
    expect(r.stdout).toContain('  * (sk-…0001) daily: $2.00 + 2 unpriced of $10.00 (at least 20%, projected at least $')
    expect(r.stdout).toContain('  * (sk-…0002) daily: $0.00 1 unpriced of $10.00 (at least 0%')
    expect(r.stdout).toContain('Unpriced    calls with no known price count as $0: marked amounts are lower bounds\n')
  })

  it('--json carries the counts of the answers it prints', async () => {
    const r = await cli('status', '--url', t.url, '--json')
    expect(r.code, r.stderr).toBe(0)
    const s = JSON.parse(r.stdout)
    expect(s.summary.today_unpriced_requests).toBe(3)
    expect(s.summary.month_unpriced_requests).toBe(3)
    const daily = (hash: string) => s.budgets.find((b: { api_key_hash: string }) => b.api_key_hash === hash).windows.find((w: { period: string }) => w.period === 'daily')
    expect(daily(A.api_key_hash).unpriced_requests).toBe(2)
    expect(daily(B.api_key_hash).unpriced_requests).toBe(1)
  })

  it('marks the spend read from the ledger file (--local), and --json carries its counts', async () => {
    const r = await cli('status', '--local', '--no-import')
    expect(r.code, r.stderr).toBe(0)
    expect(r.stdout).toMatch(/^Today {7}\$2\.00 \+ 3 unpriced in 4 calls/m)
    expect(r.stdout).toContain('marked amounts are lower bounds')
    const j = JSON.parse((await cli('status', '--local', '--no-import', '--json')).stdout)
    expect([j.summary.today_unpriced_requests, j.summary.month_unpriced_requests]).toEqual([3, 3])
  })

  it('a tenant without such calls reads plain, with no note', async () => {
    const r = await cli('status', '--url', t.url, '--tenant', 'nobody')
    expect(r.code, r.stderr).toBe(0)
    expect(r.stdout).toMatch(/^Today {7}\$0\.00 in 0 calls/m)
    expect(r.stdout).not.toContain('unpriced')
  })
})
