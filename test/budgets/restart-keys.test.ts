import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { hashKey } from '../../src/main/proxy/attribution'
import { ADMIN_CONFIG } from '../admin/support'
import { getJson } from '../dashboard/seed'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'
import { NANO_COST, NANO_FIXTURE, chat, replayJson } from './support'

// The raw key is never stored, so which prefix rules a key matches is learnt from its calls: it
// must survive a restart, or the key's spend is shown (and alerted) as nothing until its next call.

let upstream: MockUpstream
let servers: TestServer[] = []
beforeAll(async () => {
  upstream = await startMockUpstream()
  replayJson(upstream, NANO_FIXTURE)
})
afterEach(async () => {
  for (const t of servers) await t.cleanup().catch(() => {})
  servers = []
})
afterAll(async () => {
  await upstream?.close()
})

const listing = async (t: TestServer) => ((await getJson(`${t.url}/api/dashboard/budgets`)).body.rules as any[]).map((r) => [r.rule.api_key_pattern, r.api_key_hash, r.windows[0]?.spent_usd ?? null])

describe('budgets after a restart, before a key calls again', () => {
  it('lists and alerts the key under its rule with its spend, as before the restart (and not under another prefix rule)', async () => {
    const config = {
      ...ADMIN_CONFIG,
      timezone: 'UTC',
      budgets: {
        rules: [
          // Three calls are 95% of the day's limit: over the soft limit, a warning alert (tray, desktop).
          { api_key_pattern: 'sk-rl-*', daily_limit_usd: (3 * NANO_COST) / 0.95, soft_limit_pct: 0.9, action: 'warn' },
          { api_key_pattern: 'sk-other-*', daily_limit_usd: 1, action: 'warn' },
        ],
      },
    }
    let t = await startTestServer(config, upstream.url)
    servers.push(t)
    const key = 'sk-rl-aaaaaaaaaaaa-0001'
    for (let i = 0; i < 3; i++) expect((await chat(t, key)).status).toBe(200)
    expect(await t.server.ledger.flushed()).toBe(true)
    const before = await listing(t)
    expect(before).toEqual([['sk-rl-*', hashKey(key), expect.any(Number)], ['sk-other-*', null, 0]])
    expect(before[0][2]).toBeCloseTo(3 * NANO_COST, 12)
    const alerts = t.server.context.budgets!.alerts()
    expect(alerts).toMatchObject([{ api_key_pattern: 'sk-rl-*', api_key_hash: hashKey(key), level: 'warning' }])

    t = await t.restart()
    servers.push(t)
    expect(await listing(t)).toEqual(before)
    expect(t.server.context.budgets!.alerts()).toEqual(alerts)
  }, 60_000)
})
