import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { keyHash, makeCall } from '../dashboard/seed'
import { runCliCaptured } from '../support/cli'
import { request } from '../support/http'
import { type TestServer, startTestServer } from '../support/server'

/**
 * What `status` and `report --csv` print: a budget line per key names that key (limits are per
 * key: two keys under `*` printed as two identical-looking lines) and what else its rule is
 * limited to; a report's summed cost is printed without the binary residue of the addition.
 */

let t: TestServer
const now = Date.now()
const today = (ago: number) => Math.max(now - ago, now - (now % 86_400_000))
const cli = (...args: string[]) => runCliCaptured(...args, '--url', t.url, '--config', t.configFile, '--data-dir', t.dir)

beforeAll(async () => {
  t = await startTestServer({
    timezone: 'UTC',
    budgets: { rules: [{ api_key_pattern: '*', daily_limit_usd: 10, action: 'warn' }, { api_key_pattern: 'sk-cccc-000000000003', agent: 'claude-code', daily_limit_usd: 5, action: 'warn' }] },
  })
  const a = { tenant: 'two', api_key_hash: keyHash('sk-aaaa-000000000001'), key_hint: 'sk-…0001' }
  const b = { tenant: 'two', api_key_hash: keyHash('sk-bbbb-000000000002'), key_hint: 'sk-…0002' }
  t.server.ledger.record(makeCall({ ts: today(60_000), ...a, cost_usd: 9 }))
  t.server.ledger.record(makeCall({ ts: today(50_000), ...b, cost_usd: 1 }))
  t.server.ledger.record(makeCall({ ts: today(45_000), tenant: 'scoped', api_key_hash: keyHash('sk-cccc-000000000003'), key_hint: 'sk-…0003', agent: 'claude-code', cost_usd: 2 }))
  // One day, two models: $0.10 and $0.20.
  t.server.ledger.record(makeCall({ ts: today(40_000), tenant: 'float', model: 'gpt-4o-mini', cost_usd: 0.1 }))
  t.server.ledger.record(makeCall({ ts: today(30_000), tenant: 'float', model: 'gpt-4o', cost_usd: 0.2 }))
  await t.server.ledger.flushed()
})
afterAll(async () => {
  await t.cleanup()
})

describe('burnrate status', () => {
  it('names the key of each budget line (the API lists one entry per key, with its hint)', async () => {
    const api = (await request(`${t.url}/api/dashboard/budgets?tenant=two`)).json() as { rules: { rule: { api_key_pattern: string }; key_hint: string | null }[] }
    expect(api.rules.filter((r) => r.rule.api_key_pattern === '*').map((r) => r.key_hint).sort()).toEqual(['sk-…0001', 'sk-…0002'])
    const r = await cli('status', '--tenant', 'two')
    expect(r.code, r.out).toBe(0)
    const lines = r.out.split('\n').filter((l) => /^ {2}\* .* daily: /.test(l))
    expect(lines).toHaveLength(2)
    expect(lines.find((l) => l.includes('(sk-…0001)')), r.out).toContain('$9.00 of $10.00')
    expect(lines.find((l) => l.includes('(sk-…0002)')), r.out).toContain('$1.00 of $10.00')
  })

  it("names what a rule is limited to besides its keys", async () => {
    const r = await cli('status', '--tenant', 'scoped')
    expect(r.code, r.out).toBe(0)
    expect(r.out).toContain('  sk-…0003 [agent claude-code] daily: $2.00 of $5.00')
  })
})

describe('burnrate report --csv', () => {
  it('prints $0.10 + $0.20 on one day as 0.3, not 0.30000000000000004', async () => {
    const r = await cli('report', 'daily', '--tenant', 'float', '--csv')
    expect(r.code, r.out).toBe(0)
    const row = r.out.split('\r\n')[1].split(',')
    expect(row[6], r.out).toBe('0.3')
    // the JSON is the contract's: sums as computed, never rounded
    const j = await cli('report', 'daily', '--tenant', 'float', '--json')
    expect(JSON.parse(j.out).rows[0].cost_usd).toBe(0.1 + 0.2)
  })
})
