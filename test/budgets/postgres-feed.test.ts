import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { describe, expect, it } from 'vitest'
import { budgetsOf } from '../../src/main/budgets'
import { SharedCallFeed } from '../../src/main/budgets/feed/listen'
import { type FeedRow, publishCalls, shareKnownPatterns } from '../../src/main/budgets/feed/publish'
import { parseSnapshot } from '../../src/main/budgets/feed/snapshot'
import { hashKey } from '../../src/main/proxy/attribution'
import { getJson, makeCall } from '../dashboard/seed'
import { eventually, postJson } from '../support/http'
import { usePostgres } from '../support/pg-harness'
import { ADMIN_CONFIG, admin } from '../admin/support'
import { NANO_COST, NANO_FIXTURE, fixtureModel, pgBudgetServer, replayJson } from './support'

/**
 * Two real servers on one PostgreSQL: what one records reaches the other's in-process meters as
 * it is stored (budgets/feed/), not at its next restart or rule change. Before, each
 * instance's budget listing, warnings, per-minute limits and threshold alerts counted only its
 * own calls after start-up.
 */

const h = usePostgres()
const BODY = { model: 'gpt-5-nano', messages: [{ role: 'user', content: 'hi' }] }

type Server = Awaited<ReturnType<typeof pgBudgetServer>>
const server = (url: string, config: Record<string, unknown>) => pgBudgetServer(h, url, config)
const call = (s: Server, key: string) => postJson(`${s.url}/v1/chat/completions`, BODY, { authorization: `Bearer ${key}` })

/** A server's budget listing's row for `key` under `pattern` (undefined when not listed). */
async function listed(s: Server, pattern: string, key: string): Promise<any> {
  const body = (await getJson(`${s.url}/api/dashboard/budgets`)).body
  return body.rules.find((r: any) => r.rule.api_key_pattern === pattern && r.api_key_hash === hashKey(key))
}

/** What a server's budget listing shows as spent today by `key` under `pattern` (null when not listed). */
async function dailySpent(s: Server, pattern: string, key: string): Promise<number | null> {
  return (await listed(s, pattern, key))?.windows.find((w: any) => w.period === 'daily')?.spent_usd ?? null
}

/** The exact sum of what every server recorded for `key`, once each has stored its calls. */
async function recorded(servers: Server[], key: string): Promise<{ n: number; usd: number }> {
  for (const s of servers) await s.server.ledger.flushed()
  const rows = await servers[0].store.all<{ cost_usd: number }>('SELECT cost_usd FROM calls WHERE api_key_hash = @k', { k: hashKey(key) })
  return { n: rows.length, usd: rows.reduce((t, r) => t + r.cost_usd, 0) }
}

/** Equal but for the order the sums were added in (a call counted twice or missed is NANO_COST off). */
const same = (x: number | null, y: number) => x !== null && Math.abs(x - y) <= 1e-12

/** Requests a server's meter of `key` counts in the last minute (under its first rule with a per-minute limit). */
function rateUsed(s: Server, key: string): number {
  for (const r of budgetsOf(s.server.context).engine.status()) {
    for (const k of r.keys) {
      if (k.key.hash !== hashKey(key)) continue
      return k.meter.requestsInLastMinute(Date.now())
    }
  }
  return 0
}

/** Both servers up, with their meters read (each lists a call of its own). */
async function ready(a: Server, b: Server, pattern: string, warmKey: string): Promise<void> {
  for (const s of [a, b]) {
    expect((await call(s, warmKey)).status).toBe(200)
    await eventually(async () => (await listed(s, pattern, warmKey)) !== undefined, 20_000)
    await eventually(() => (budgetsOf(s.server.context).feed?.stats.reloads ?? 0) > 0, 20_000)
  }
}

/** Two servers on a new database with `config`, their meters read, answering with the fixture. */
async function twoServers(config: Record<string, unknown>, pattern: string): Promise<[Server, Server]> {
  const url = h.database()
  const a = await server(url, config)
  const b = await server(url, config)
  replayJson(h.upstream, NANO_FIXTURE)
  await ready(a, b, pattern, `${pattern.slice(0, -1)}warm-0000`)
  return [a, b]
}

async function receiver() {
  const got: any[] = []
  const srv = http.createServer(async (req, res) => {
    const parts: Buffer[] = []
    for await (const c of req) parts.push(c as Buffer)
    got.push(JSON.parse(Buffer.concat(parts).toString('utf8')))
    res.writeHead(204).end()
  })
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r))
  h.onTeardown(() => new Promise<void>((r) => srv.close(() => r())))
  return { url: `http://127.0.0.1:${(srv.address() as AddressInfo).port}`, got }
}

describe("one instance's calls in the other instances' meters (PostgreSQL)", () => {
  it("the other server's budget listing and warnings count them, exactly once", async () => {
    const rules = [{ api_key_pattern: 'sk-feed-*', daily_limit_usd: NANO_COST * 3.5, action: 'warn' }]
    const [a, b] = await twoServers({ budgets: { rules } }, 'sk-feed-*')
    const key = 'sk-feed-aaaaaaaa-0001'
    for (let i = 0; i < 4; i++) expect((await call(a, key)).status).toBe(200)
    const sum = await recorded([a, b], key)
    expect(sum.n).toBe(4)
    // B recorded none of them, and lists all four, each once.
    await eventually(async () => same(await dailySpent(b, 'sk-feed-*', key), sum.usd), 20_000)
    expect(same(await dailySpent(a, 'sk-feed-*', key), sum.usd)).toBe(true)
    // Today's spend (the tray, burnrate_spend_usd) counts them too, and the key registry's requests.
    expect(same(b.server.ledger.spend.key(hashKey(key)).day, sum.usd)).toBe(true)
    const requestsOn = (s: Server) => budgetsOf(s.server.context).engine.keysThisMonth().find((k) => k.hash === hashKey(key))?.requestsMonth
    expect(requestsOn(b)).toBe(4)
    // Read again, the same: nothing counted twice.
    await budgetsOf(b.server.context).feed!.reload()
    expect(same(await dailySpent(b, 'sk-feed-*', key), sum.usd)).toBe(true)
    expect(same(b.server.ledger.spend.key(hashKey(key)).day, sum.usd)).toBe(true)
    expect(requestsOn(b)).toBe(4)
    const health = (await getJson(`${b.url}/api/health`)).body
    expect(health.calls_feed).toMatchObject({ listening: true, heard: expect.any(Number), reads: expect.any(Number) })
    expect(health.calls_feed.heard).toBeGreaterThan(0)
    // So B's first call of the key is warned: the key is over its limit on every instance.
    const r = await call(b, key)
    expect(r.status).toBe(200)
    expect(String(r.headers['x-burnrate-budget-warning'])).toMatch(/^sk-feed-\* daily /)
  }, 90_000)

  it('a per-minute request limit is one limit across the servers', async () => {
    const rules = [{ api_key_pattern: 'sk-rpm-*', requests_per_minute: 3, action: 'block' }]
    const [a, b] = await twoServers({ budgets: { rules } }, 'sk-rpm-*')
    const key = 'sk-rpm-bbbbbbbb-0002'
    for (let i = 0; i < 3; i++) expect((await call(a, key)).status).toBe(200)
    expect((await recorded([a, b], key)).n).toBe(3)
    // Once B has heard of A's three, it refuses the fourth as A does.
    const engineB = budgetsOf(b.server.context).engine
    await eventually(() => engineB.status().some((s) => s.keys.some((k) => k.key.hash === hashKey(key) && k.meter.rate(Date.now()) !== null)), 20_000)
    const refused = await call(b, key)
    expect(refused.status).toBe(429)
    expect(refused.json().error).toMatchObject({ type: 'rate_limited', unit: 'requests_per_minute', limit: 3, used: 3 })
    expect((await call(a, key)).status).toBe(429)
  }, 90_000)

  it('a per-minute request limit counts the other server\'s calls as they are admitted, not once they are answered and stored', async () => {
    const rules = [{ api_key_pattern: 'sk-rpm-*', requests_per_minute: 3, action: 'block' }]
    const [a, b] = await twoServers({ budgets: { rules } }, 'sk-rpm-*')
    const key = 'sk-rpm-dddddddd-0004'
    // Calls that take 3 s to answer: A's two are in flight (not stored) while B decides its own.
    replayJson(h.upstream, NANO_FIXTURE, { headerDelayMs: 3000 })
    const feedB = budgetsOf(b.server.context).feed!
    const heard = feedB.stats.admissions
    const onA = [call(a, key), call(a, key)]
    await eventually(() => feedB.stats.admissions > heard && rateUsed(b, key) === 2, 20_000)
    expect((await recorded([a, b], key)).n).toBe(0)
    const third = call(b, key)
    await eventually(() => rateUsed(b, key) === 3, 20_000)
    // The fourth in the minute is refused on either server, while the three are still in flight.
    const refused = await call(b, key)
    expect(refused.status).toBe(429)
    expect(refused.json().error).toMatchObject({ type: 'rate_limited', unit: 'requests_per_minute', limit: 3, used: 3 })
    await eventually(() => rateUsed(a, key) === 3, 20_000)
    expect((await call(a, key)).status).toBe(429)
    for (const r of await Promise.all([...onA, third])) expect(r.status).toBe(200)
    // Stored and heard by both: each of the three is still counted once.
    expect((await recorded([a, b], key)).n).toBe(5)
    const requestsOn = (s: Server) => budgetsOf(s.server.context).engine.keysThisMonth().find((k) => k.hash === hashKey(key))?.requestsMonth
    for (const s of [a, b]) await eventually(() => requestsOn(s) === 5, 20_000)
    expect(rateUsed(a, key)).toBe(3)
    expect(rateUsed(b, key)).toBe(3)
  }, 90_000)

  it("a threshold crossed by both servers' calls together sends one webhook, from whichever claims it", async () => {
    const hook = await receiver()
    const config = {
      alerts: { webhooks: [{ url: `${hook.url}/hook`, format: 'json' }], backoff_ms: 20 },
      budgets: { rules: [{ api_key_pattern: 'sk-alert-*', daily_limit_usd: NANO_COST * 4 * (1 - 1e-9), action: 'warn', alert_at_pct: [0.5, 1] }] },
    }
    const [a, b] = await twoServers(config, 'sk-alert-*')
    const key = 'sk-alert-cccccccc-0003'
    // A, B, A, B: each call waits until the other server counts it. Alone, each would see half.
    for (let i = 0; i < 4; i++) {
      const [mine, other] = i % 2 === 0 ? [a, b] : [b, a]
      expect((await call(mine, key)).status).toBe(200)
      const sum = await recorded([a, b], key)
      await eventually(async () => same(await dailySpent(other, 'sk-alert-*', key), sum.usd), 20_000)
    }
    await eventually(() => hook.got.filter((g) => g.api_key_hash === hashKey(key)).length === 2, 20_000)
    // One more call each way, counted by both: every claim of the crossings above has been settled by then.
    for (const [mine, other] of [[a, b], [b, a]]) {
      expect((await call(mine, key)).status).toBe(200)
      const sum = await recorded([a, b], key)
      await eventually(async () => same(await dailySpent(other, 'sk-alert-*', key), sum.usd), 20_000)
    }
    const mine = hook.got.filter((g) => g.api_key_hash === hashKey(key))
    expect(mine.map((g) => g.threshold_pct)).toEqual([0.5, 1])
    expect(mine[1].spent_usd).toBeCloseTo(NANO_COST * 4, 15)
    // One claim per webhook sent (the warm-up key's two calls crossed 50% too).
    const claims = await a.store.all<{ id: string }>('SELECT id FROM alert_claims')
    expect(claims).toHaveLength(hook.got.length)
  }, 90_000)

  it('a server whose listening connection was cut reads the calls it missed once it is back, none twice', async () => {
    const rules = [{ api_key_pattern: 'sk-cut-*', daily_limit_usd: 100, action: 'warn' }]
    const [a, b] = await twoServers({ budgets: { rules } }, 'sk-cut-*')
    const feedB = budgetsOf(b.server.context).feed!
    expect(feedB.stats.connects).toBe(1)
    const key = 'sk-cut-dddddddd-0004'
    expect((await call(a, key)).status).toBe(200)
    await eventually(async () => same(await dailySpent(b, 'sk-cut-*', key), (await recorded([a, b], key)).usd), 20_000)
    // Every LISTEN connection cut at once (B's among them); A stores more calls while B reconnects.
    const cut = await a.store.all<{ ok: boolean }>("SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity WHERE query LIKE 'LISTEN %' AND datname = current_database()")
    expect(cut.length).toBeGreaterThanOrEqual(2)
    for (let i = 0; i < 5; i++) expect((await call(a, key)).status).toBe(200)
    const sum = await recorded([a, b], key)
    expect(sum.n).toBe(6)
    await eventually(() => feedB.stats.connects === 2, 20_000)
    await eventually(async () => same(await dailySpent(b, 'sk-cut-*', key), sum.usd), 20_000)
    expect(same(b.server.ledger.spend.key(hashKey(key)).day, sum.usd)).toBe(true)
    // And stays there: nothing heard before the reload is counted on top of it.
    expect((await call(b, 'sk-cut-warm-0000')).status).toBe(200)
    await eventually(async () => same(await dailySpent(a, 'sk-cut-*', 'sk-cut-warm-0000'), (await recorded([a, b], 'sk-cut-warm-0000')).usd), 20_000)
    expect(same(await dailySpent(b, 'sk-cut-*', key), sum.usd)).toBe(true)
  }, 90_000)

  it('calls a server records while it reads its meters again are counted once, whether the read found them or not', async () => {
    const url = h.database()
    const rules = [{ api_key_pattern: 'sk-reread-*', daily_limit_usd: 100, action: 'warn' }]
    const a = await server(url, { budgets: { rules } })
    replayJson(h.upstream, NANO_FIXTURE)
    const feed = budgetsOf(a.server.context).feed!
    await eventually(() => feed.stats.reloads > 0, 20_000)
    const key = 'sk-reread-eeeeeeee-0005'
    expect((await call(a, key)).status).toBe(200)
    // A call recorded every millisecond while a read is under way: some stored before its
    // snapshot, some after it, some not yet when the meters are rebuilt from it.
    const own = { api_key_hash: hashKey(key), key_hint: 'sk-r…0005', model: 'gpt-5-nano' }
    let n = 0
    for (let i = 0; i < 10; i++) {
      let read = false
      void feed.reload().then(() => {
        read = true
      })
      while (!read) {
        a.server.ledger.record(makeCall({ ...own, ts: Date.now(), cost_usd: 0.001 * (1 + (n++ % 7)) }))
        await new Promise((r) => setTimeout(r, 1))
      }
    }
    const sum = await recorded([a], key)
    expect(sum.n).toBe(n + 1)
    expect(n).toBeGreaterThan(20)
    expect(same(await dailySpent(a, 'sk-reread-*', key), sum.usd)).toBe(true)
    expect(same(a.server.ledger.spend.key(hashKey(key)).day, sum.usd)).toBe(true)
    expect(budgetsOf(a.server.context).engine.keysThisMonth().find((k) => k.hash === hashKey(key))?.requestsMonth).toBe(n + 1)
  }, 90_000)

  it("a call re-priced through one server moves the other's listing and today's spend by its change", async () => {
    const rules = [{ api_key_pattern: 'sk-moved-*', daily_limit_usd: 100, action: 'warn' }]
    const [a, b] = await twoServers({ budgets: { rules }, ...ADMIN_CONFIG }, 'sk-moved-*')
    const key = 'sk-moved-ffffffff-0006'
    for (let i = 0; i < 3; i++) expect((await call(a, key)).status).toBe(200)
    const before = await recorded([a, b], key)
    await eventually(async () => same(await dailySpent(b, 'sk-moved-*', key), before.usd), 20_000)
    const heard = budgetsOf(b.server.context).feed!.stats.counted
    const model = fixtureModel(NANO_FIXTURE)
    expect((await admin(a.url, 'PUT', `/prices/openai/${model}`, { body: { input_mtok: 100, output_mtok: 400 } })).status).toBe(200)
    expect((await admin(a.url, 'POST', `/prices/openai/${model}/reprice?all=true`)).json()).toMatchObject({ repriced: expect.any(Number) })
    const after = await recorded([a, b], key)
    expect(after.usd).toBeGreaterThan(before.usd * 100)
    // B moved by the change A made, as it heard it.
    await eventually(async () => same(await dailySpent(b, 'sk-moved-*', key), after.usd), 20_000)
    expect(same(b.server.ledger.spend.key(hashKey(key)).day, after.usd)).toBe(true)
    expect(budgetsOf(b.server.context).feed!.stats.counted).toBeGreaterThan(heard)
    expect(same(await dailySpent(a, 'sk-moved-*', key), after.usd)).toBe(true)
  }, 90_000)

  it('a feed whose first read failed still reconnects when its connection is cut before the read is tried again', async () => {
    const url = h.database()
    const store = h.store(url)
    let reads = 0
    // The meters' first read fails (as with PostgreSQL away for it); the next ones succeed.
    const feed = new SharedCallFeed(store, 'feed-under-test', {
      rows: () => {},
      known: () => {},
      moves: () => {},
      admissions: () => {},
      reload: async () => (++reads === 1 ? null : parseSnapshot((await store.get<{ s: string }>('SELECT pg_current_snapshot()::text AS s'))!.s)),
    })
    h.onTeardown(() => feed.close())
    feed.start()
    await eventually(() => reads === 1 && feed.status().listening, 20_000)
    // While the failed read waits to be tried again, the listening connection is cut.
    await store.run("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE 'LISTEN %' AND datname = current_database()")
    await eventually(() => !feed.status().listening, 20_000)
    await eventually(() => feed.status().listening && feed.status().reads > 0, 20_000)
  }, 60_000)

  it('a listening connection that stays open but hears nothing (a pooler in transaction mode, a dropped socket) is replaced, and the meters read again', async () => {
    const url = h.database()
    const store = h.store(url)
    const other = h.store(url)
    const counted: FeedRow[] = []
    const warnings: string[] = []
    let reads = 0
    const log = { debug() {}, info() {}, error() {}, warn: (m: string) => warnings.push(m) }
    // Read by the feed at each check: lengthened once the deaf connection is replaced, so that a
    // check slow to come back on a busy machine cannot replace the new one too.
    const timing = { everyMs: 100, waitMs: 5000 }
    const feed = new SharedCallFeed(
      store,
      'feed-under-test',
      {
        rows: (rows) => counted.push(...rows),
        known: () => {},
        moves: () => {},
        admissions: () => {},
        reload: async () => {
          reads++
          return parseSnapshot((await store.get<{ s: string }>('SELECT pg_current_snapshot()::text AS s'))!.s)
        },
      },
      log,
      timing,
    )
    h.onTeardown(() => feed.close())
    feed.start()
    // Read, not only asked for (`reads` counts reloads begun): a call stored before the read's
    // snapshot is in what it reads, and its notification is rightly not counted again.
    await eventually(() => feed.status().listening && feed.status().reads === 1, 20_000)
    // Another instance stores a call: heard.
    const store1 = (key: string) => other.transaction((tx) => publishCalls(tx, other, [makeCall({ api_key_hash: key, cost_usd: 0.25 })]))
    await store1('heard-1')
    await eventually(() => counted.some((r) => r[0] === 'heard-1'), 20_000)
    expect(feed.status().missed_checks).toBe(0)
    expect(warnings).toEqual([])

    // The connection stays open but no longer listens (what a transaction-mode pooler leaves).
    await (feed as unknown as { client: { query(sql: string): Promise<unknown> } }).client.query('UNLISTEN *')
    await store1('lost-1')
    // Its own check goes unheard: it reconnects, and the meters are read again (they hold the lost call).
    await eventually(() => feed.status().missed_checks >= 1 && feed.status().listening && feed.status().reads >= 2, 40_000)
    expect(reads).toBeGreaterThanOrEqual(2)
    timing.everyMs = timing.waitMs = 3_600_000
    expect(counted.some((r) => r[0] === 'lost-1')).toBe(false)
    expect(warnings.length).toBe(1)
    expect(warnings[0]).toMatch(/did not hear its own check.*transaction mode/)
    // Listening again: the next call is heard as it is stored.
    const missed = feed.status().missed_checks
    await store1('heard-2')
    await eventually(() => counted.some((r) => r[0] === 'heard-2'), 20_000)
    expect(feed.status().missed_checks).toBe(missed)
  }, 90_000)

  it("a call a read of the meters already holds is not counted again, but its notification still tells the key's patterns and the answered model", async () => {
    const url = h.database()
    const store = h.store(url)
    const other = h.store(url)
    // The other instance saw the raw key match `sk-team-*` (a raw key is never stored: only its notification says so).
    shareKnownPatterns(other, () => ['sk-team-*'])
    const counted: FeedRow[] = []
    const known: FeedRow[] = []
    let storeFirst = false
    const store1 = (key: string) =>
      other.transaction((tx) => publishCalls(tx, other, [makeCall({ api_key_hash: key, model: 'gpt-5-nano-2025-08-07', requested_model: 'gpt-5-nano' })]))
    const feed = new SharedCallFeed(store, 'feed-under-test', {
      rows: (rows) => counted.push(...rows),
      known: (rows) => known.push(...rows),
      moves: () => {},
      admissions: () => {},
      reload: async () => {
        // Another instance's call committed, its notification sent, before this read's snapshot: the read holds it.
        if (storeFirst) {
          storeFirst = false
          await store1('read-1')
        }
        return parseSnapshot((await store.get<{ s: string }>('SELECT pg_current_snapshot()::text AS s'))!.s)
      },
    })
    h.onTeardown(() => feed.close())
    feed.start()
    await eventually(() => feed.status().listening && feed.status().reads >= 1, 20_000)
    storeFirst = true
    await feed.reload()
    await eventually(() => known.some((r) => r[0] === 'read-1'), 20_000)
    const row = known.find((r) => r[0] === 'read-1')!
    expect([row[3], row[4], row[14]]).toEqual(['gpt-5-nano-2025-08-07', 'gpt-5-nano', ['sk-team-*']])
    expect(counted.some((r) => r[0] === 'read-1')).toBe(false)
    expect(feed.status().skipped).toBeGreaterThanOrEqual(1)
    // A call the reads do not hold is counted (and tells the same through `rows`), not handed to `known`.
    await store1('heard-1')
    await eventually(() => counted.some((r) => r[0] === 'heard-1'), 20_000)
    expect(known.some((r) => r[0] === 'heard-1')).toBe(false)
  }, 60_000)
})
