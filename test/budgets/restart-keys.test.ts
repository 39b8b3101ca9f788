import { execFileSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { resolve } from 'node:path'
import Database from 'better-sqlite3'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { hashKey } from '../../src/main/proxy/attribution'
import { ADMIN_CONFIG, admin } from '../admin/support'
import { type Receiver, receiver } from '../alerts/support'
import { getJson } from '../dashboard/seed'
import { chatAnswer } from '../pricing/support'
import { eventually, postJson } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'
import { NANO_COST, NANO_FIXTURE, chat, replayJson } from './support'

// The raw key is never stored, so which prefix rules a key matches is learnt from its calls: it
// must survive a restart, or the key's spend is shown (and alerted) as nothing until its next call.

/** The built write thread, as the headless server runs it (`npm test` builds first). */
const WORKER = resolve(__dirname, '../../out/main/ledger-worker.js')

const UNPRICED = 'gpt-6.1-sol' // unknown to the bundled prices: recorded at $0 until re-priced

let upstream: MockUpstream
let servers: TestServer[] = []
let hook: Receiver
beforeAll(async () => {
  upstream = await startMockUpstream()
  replayJson(upstream, NANO_FIXTURE)
  hook = await receiver()
})
afterEach(async () => {
  for (const t of servers) await t.cleanup().catch(() => {})
  servers = []
})
afterAll(async () => {
  await upstream?.close()
  await hook?.close()
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

  it('a re-price that lifts a key over its thresholds announces them (webhooks)', async () => {
    const config = {
      ...ADMIN_CONFIG,
      timezone: 'UTC',
      alerts: { webhooks: [{ url: `${hook.url}/reprice`, format: 'json' }], backoff_ms: 20 },
      budgets: { rules: [{ api_key_pattern: 'sk-rp-*', daily_limit_usd: 10, action: 'warn' }, { api_key_pattern: 'sk-other-*', daily_limit_usd: 1, action: 'warn' }] },
    }
    let t = await startTestServer(config, upstream.url)
    servers.push(t)
    upstream.setResponder(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body: chatAnswer(UNPRICED, 1_000_000, 100_000) }))
    const key = 'sk-rp-aaaaaaaaaaaa-0001'
    const call = () => postJson(`${t.url}/v1/chat/completions`, { model: UNPRICED, messages: [{ role: 'user', content: 'hi' }] }, { authorization: `Bearer ${key}` })
    // Two calls recorded at $0 (no price yet), then a restart.
    expect((await call()).status).toBe(200)
    expect((await call()).status).toBe(200)
    expect(await t.server.ledger.flushed()).toBe(true)
    t = await t.restart()
    servers.push(t)

    // $3/M input, $12/M output: $4.20 a call, $8.40 of $10: 50% and 80% crossed.
    expect((await admin(t.url, 'PUT', `/prices/openai/${UNPRICED}`, { body: { input_mtok: 3, output_mtok: 12 } })).status).toBe(200)
    expect((await admin(t.url, 'POST', `/prices/openai/${UNPRICED}/reprice`)).json()).toMatchObject({ repriced: 2 })
    await eventually(() => hook.got.length >= 2, 10_000)
    const got = hook.got
    expect(got.map((g) => [g.body.rule.api_key_pattern, g.body.api_key_hash, g.body.threshold_pct])).toEqual([
      ['sk-rp-*', hashKey(key), 0.5],
      ['sk-rp-*', hashKey(key), 0.8],
    ])
    expect(got[1].body.spent_usd).toBeCloseTo(8.4, 12)
  }, 60_000)
})

describe('the patterns a key is seen to match are kept off the call’s way', () => {
  it('are written by the ledger’s write thread in the transaction of the key’s call, never by the event loop', async () => {
    if (!existsSync(WORKER)) execFileSync('npx', ['electron-vite', 'build'], { cwd: resolve(__dirname, '../..'), stdio: 'ignore' })
    const config = { timezone: 'UTC', budgets: { rules: [{ api_key_pattern: 'sk-wt-*', daily_limit_usd: 1, action: 'warn' }] } }
    const t = await startTestServer(config, upstream.url, undefined, { create: { ledgerWorker: WORKER } })
    servers.push(t)
    // Every row the main thread's connection inserts into key_patterns (a TEMP trigger is its alone).
    const main = t.server.context.db
    let onMain = 0
    main.function('key_pattern_on_main', () => {
      onMain++
      return null
    })
    main.exec('CREATE TEMP TRIGGER key_pattern_on_main AFTER INSERT ON main.key_patterns BEGIN SELECT key_pattern_on_main(); END')

    const key = 'sk-wt-aaaaaaaaaaaa-0001'
    expect((await chat(t, key)).status).toBe(200)
    const ro = new Database(t.dbFile, { readonly: true })
    try {
      const calls = ro.prepare('SELECT count(*) FROM calls WHERE api_key_hash = ?').pluck()
      const patterns = ro.prepare('SELECT pattern FROM key_patterns WHERE api_key_hash = ?').pluck()
      await eventually(() => (calls.get(hashKey(key)) as number) === 1, 10_000)
      // The call on disk has its key's pattern on disk with it (a crash now loses neither).
      expect(patterns.all(hashKey(key))).toEqual(['sk-wt-*'])
    } finally {
      ro.close()
    }
    expect(t.server.ledger.writesOnThread).toBe(true)
    expect(onMain).toBe(0)

    // And it is known again after a restart.
    expect((await chat(t, key)).status).toBe(200)
    const again = await t.restart()
    servers.push(again)
    expect(await listing(again)).toEqual([['sk-wt-*', hashKey(key), expect.any(Number)]])
  }, 120_000)
})

describe('the patterns of a deleted rule', () => {
  it('go with the rule; the remaining rules keep theirs and their keys’ spend (before and after a restart)', async () => {
    const config = { ...ADMIN_CONFIG, timezone: 'UTC', budgets: { rules: [{ api_key_pattern: 'sk-keep-*', daily_limit_usd: 1, action: 'warn' }] } }
    replayJson(upstream, NANO_FIXTURE)
    let t = await startTestServer(config, upstream.url)
    servers.push(t)
    expect((await admin(t.url, 'POST', '/budgets/rules', { body: { api_key_pattern: 'sk-gone-*', daily_limit_usd: 1, action: 'warn' } })).status).toBe(201)
    const kept = 'sk-keep-aaaaaaaaaaaa-0001'
    const gone = 'sk-gone-aaaaaaaaaaaa-0001'
    expect((await chat(t, kept)).status).toBe(200)
    expect((await chat(t, gone)).status).toBe(200)
    expect(await t.server.ledger.flushed()).toBe(true)
    const stored = () => t.server.context.db.prepare('SELECT api_key_hash, pattern FROM key_patterns ORDER BY pattern').all()
    expect(stored()).toEqual([
      { api_key_hash: hashKey(gone), pattern: 'sk-gone-*' },
      { api_key_hash: hashKey(kept), pattern: 'sk-keep-*' },
    ])

    expect((await admin(t.url, 'DELETE', '/budgets/rules?pattern=sk-gone-*')).status).toBe(204)
    expect(stored()).toEqual([{ api_key_hash: hashKey(kept), pattern: 'sk-keep-*' }])
    const before = await listing(t)
    expect(before).toEqual([['sk-keep-*', hashKey(kept), expect.closeTo(NANO_COST, 12)]])
    t = await t.restart()
    servers.push(t)
    expect(await listing(t)).toEqual(before)
  }, 60_000)
})
