import Database from 'better-sqlite3'
import { beforeAll, describe, expect, it } from 'vitest'
import type { IngestCall } from '../../src/shared/api'
import type { PostgresStore } from '../../src/main/storage/postgres'
import { keyHash } from '../dashboard/seed'
import { fixture } from '../support/fixtures'
import { eventually, postJson, request } from '../support/http'
import { freePort, localRows as sqliteRows, usePostgres } from '../support/pg-harness'
import type { TestServer } from '../support/server'

/**
 * A team server on PostgreSQL end to end: desktops (their own SQLite ledgers) report to it with
 * `team.url`; it stores what they send in PostgreSQL with `storage.url`; a second team instance
 * on the same database takes the same batches without storing anything twice.
 */

const ALICE = 'team-token-alice-7f3c9a1e5b'
const BOB = 'team-token-bob-2d8e4f6a0c'
const ALICE_KEY = 'sk-proj-alice-raw-key-1111aaaa'
const BOB_KEY = 'sk-proj-bob-raw-key-2222bbbb'
const MEMBERS = [{ name: 'alice', token: ALICE }, { name: 'bob', token: BOB }]

const h = usePostgres({
  upstream: () => ({ status: 200, headers: { 'content-type': 'application/json' }, body: fixture('openai-chat/chat-nonstream-cached.json') }),
})
let dbUrl: string
let store: PostgresStore
let port: number

const start = (config: Record<string, any>): Promise<TestServer> => h.server({ url: null, config: { timezone: 'UTC', ...config } })

const desktop = (token: string) => start({ team: { url: `http://127.0.0.1:${port}`, token, max_backoff_ms: 500 } })
const teamServer = (p = port) => start({ server: { port: p }, storage: { url: dbUrl }, team: { members: MEMBERS } })

async function call(t: TestServer, key: string): Promise<void> {
  const r = await postJson(
    `${t.url}/v1/chat/completions`,
    { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] },
    { authorization: `Bearer ${key}`, 'x-burnrate-agent': 'bot', 'x-burnrate-session': 'run-1' },
  )
  expect(r.status).toBe(200)
}

/** The desktop's own calls (its SQLite file). */
const localRows = (t: TestServer): any[] => sqliteRows(t.dbFile, 'SELECT * FROM calls ORDER BY id')

/** The team's calls, in PostgreSQL. */
const teamRows = (where = 'true') => store.all<any>(`SELECT * FROM calls WHERE ${where} ORDER BY member, origin_id`)
const health = async (t: TestServer) => (await request(`${t.url}/api/health`)).json()

beforeAll(async () => {
  dbUrl = h.database()
  store = h.store(dbUrl)
  port = await freePort()
})

describe('a desktop reporting to a team server on PostgreSQL', () => {
  let alice: TestServer
  let team: TestServer

  it('sends the calls made while the team server was down once it is up, each stored once in PostgreSQL', async () => {
    alice = await desktop(ALICE)
    for (let i = 0; i < 3; i++) await call(alice, ALICE_KEY)
    await eventually(async () => {
      const h = (await health(alice)).team
      return h?.last_error && h.backlog === 3
    })
    team = await teamServer()
    await eventually(async () => (await health(alice)).team.backlog === 0 && (await teamRows()).length === 3, 30_000)
    const sent = localRows(alice)
    const got = await teamRows()
    expect(got.map((r) => [r.member, r.origin_id])).toEqual(sent.map((r) => ['alice', r.id]))
    // Priced as the desktop recorded it, to the last bit; the key only as its hash.
    expect(got.map((r) => r.cost_usd)).toEqual(sent.map((r) => r.cost_usd))
    expect(got[0]).toMatchObject({ api_key_hash: keyHash(ALICE_KEY), key_hint: 'sk-…aaaa', agent: 'bot', session: 'run-1', source: 'proxy' })
    // The team server's own SQLite file holds none of them.
    expect(localRows(team)).toHaveLength(0)
  })

  it('does not count a replayed batch twice', async () => {
    await alice.stop()
    const db = new Database(alice.dbFile)
    db.prepare('UPDATE team_cursor SET last_id = 0').run()
    db.close()
    alice = await alice.restart()
    const restarted = alice
    h.onTeardown(() => restarted.cleanup())
    await eventually(async () => (await health(alice)).team.sent === 3, 30_000)
    expect(await teamRows()).toHaveLength(3)
    const summary = (await request(`${team.url}/api/dashboard/summary`)).json()
    expect(summary.today_requests).toBe(3)
  })

  it("shows each member's exact spend in the team's member breakdown", async () => {
    const bob = await desktop(BOB)
    for (let i = 0; i < 2; i++) await call(bob, BOB_KEY)
    await eventually(async () => (await teamRows("member = 'bob'")).length === 2, 30_000)
    const spend = (t: TestServer) => localRows(t).reduce((s, r) => s + r.cost_usd, 0)
    const costs = (await request(`${team.url}/api/dashboard/costs?group_by=member&range=24h`)).json()
    expect(costs.rows.map((r: any) => [r.key, r.requests, r.cost_usd])).toEqual([
      ['alice', 3, spend(alice)],
      ['bob', 2, spend(bob)],
    ])
    const only = (await request(`${team.url}/api/dashboard/expensive?range=24h&member=bob`)).json()
    expect(only.requests.map((r: any) => r.member)).toEqual(["bob", "bob"])
    const summary = (await request(`${team.url}/api/dashboard/summary`)).json()
    expect(summary.today_requests).toBe(5)
    // The budgets panel's overall spend beside it counts the members' calls too.
    const overall = (await request(`${team.url}/api/dashboard/budgets`)).json().overall
    expect(overall[0].spent_usd).toBeCloseTo(summary.today_spend_usd, 12)
    expect(overall[1].spent_usd).toBeCloseTo(summary.month_spend_usd, 12)
  })
})

describe('two team instances on one PostgreSQL database', () => {
  it('store a batch both receive at once only once, with rollups equal to the calls', async () => {
    const a = await teamServer(0)
    const b = await teamServer(0)
    const before = (await teamRows()).length
    const beforeSummary = (await request(`${a.url}/api/dashboard/summary`)).json()
    // Just before now (a few hundred ms, not 30 s: 30 s after midnight that would be yesterday, and "today" would miss them).
    const T0 = Date.now() - 1_000
    const batch: IngestCall[] = Array.from({ length: 200 }, (_, i) => ({
      id: 1000 + i,
      t: new Date(T0 + i).toISOString(),
      provider: 'anthropic',
      model: 'claude-sonnet-4-5',
      api_key_hash: keyHash(BOB_KEY),
      key_hint: 'sk-…bbbb',
      tenant: '',
      agent: 'claude-code',
      session: `s-${i % 7}`,
      status: 200,
      streamed: true,
      input_tokens: 1000 + i,
      output_tokens: 100,
      cache_read_tokens: 0,
      cache_write_tokens: 0,
      reasoning_tokens: 0,
      cost_usd: 0.01 + i / 1e6,
      priced: true,
      estimated: false,
      latency_ms: 500,
      response_id: `msg_${i}`,
      source: 'proxy',
      billing: 'api',
      project: '',
      member: '',
    }))
    const send = (t: TestServer, calls: IngestCall[]) => postJson(`${t.url}/api/ingest`, { calls }, { authorization: `Bearer ${BOB}` })
    // The same batch to both at once, twice each (in reverse order too): every call is stored by exactly one of them.
    const answers = await Promise.all([send(a, batch), send(b, batch), send(b, [...batch].reverse()), send(a, [...batch].reverse())])
    for (const r of answers) expect(r.status).toBe(200)
    const bodies = answers.map((r) => r.json())
    expect(bodies.reduce((n, x) => n + x.accepted, 0)).toBe(200)
    expect(bodies.reduce((n, x) => n + x.duplicates, 0)).toBe(600)
    for (const x of bodies) expect(x.rejected).toEqual([])
    const rows = await teamRows()
    expect(rows.length - before).toBe(200)
    const added = batch.reduce((s, c) => s + c.cost_usd, 0)
    for (const t of [a, b]) {
      const s = (await request(`${t.url}/api/dashboard/summary`)).json()
      expect(s.today_requests).toBe(beforeSummary.today_requests + 200)
      expect(Math.abs(s.today_spend_usd - (beforeSummary.today_spend_usd + added))).toBeLessThan(1e-9 * s.today_spend_usd)
    }
    // The rollups equal the calls, per member.
    const byMember = await store.all<{ member: string; n: number; cost: number }>(
      "SELECT member, COUNT(*) AS n, SUM(cost_usd) AS cost FROM calls GROUP BY member ORDER BY member",
    )
    const costs = (await request(`${b.url}/api/dashboard/costs?group_by=member&range=24h`)).json()
    const shown = [...costs.rows].sort((x: any, y: any) => (x.key < y.key ? -1 : 1))
    expect(shown.map((r: any) => [r.key, r.requests])).toEqual(byMember.map((m) => [m.member, m.n]))
    for (const [i, m] of byMember.entries()) expect(Math.abs(shown[i].cost_usd - m.cost)).toBeLessThan(1e-9 * m.cost)

    // A different call (another time) under an id bob already used is refused out loud, not counted as a duplicate.
    const clash = await send(a, [{ ...batch[5], t: new Date(Date.parse(batch[5].t) + 1).toISOString(), cost_usd: 9.99 }, batch[6]])
    expect(clash.json()).toMatchObject({ accepted: 0, duplicates: 1, rejected: [{ index: 0, id: 1005, error: { param: 'calls[0].id' } }] })
    expect((await teamRows()).length - before).toBe(200)

    // A newer revision of calls (re-priced on bob's Burnrate), sent to both instances at once, twice
    // each: each call is replaced once, and the rollups move once, by the difference.
    const revised = batch.slice(0, 50).map((c) => ({ ...c, revision: 1, cost_usd: c.cost_usd * 3, output_tokens: 150 }))
    const spendBefore = (await request(`${a.url}/api/dashboard/summary`)).json().today_spend_usd
    const again = await Promise.all([send(a, revised), send(b, revised), send(b, [...revised].reverse()), send(a, [...revised].reverse())])
    const sums = again.map((r) => r.json())
    expect(sums.reduce((n, x) => n + x.revised, 0)).toBe(50)
    expect(sums.reduce((n, x) => n + x.duplicates, 0)).toBe(150)
    expect(sums.reduce((n, x) => n + x.accepted, 0)).toBe(0)
    const held = await teamRows("member = 'bob' AND origin_id BETWEEN 1000 AND 1049")
    expect(held.map((r) => [Number(r.revision), r.cost_usd, Number(r.output_tokens)])).toEqual(revised.map((c) => [1, c.cost_usd, 150]))
    const moved = revised.reduce((x, c) => x + c.cost_usd * (2 / 3), 0)
    for (const t of [a, b]) {
      const s = (await request(`${t.url}/api/dashboard/summary`)).json()
      expect(Math.abs(s.today_spend_usd - (spendBefore + moved))).toBeLessThan(1e-9 * s.today_spend_usd)
    }
    // A revision of a call neither instance holds (pruned) is not stored.
    const count = (await teamRows()).length
    const unheld = await send(a, [{ ...batch[0], id: 999_999, revision: 2 }])
    expect(unheld.json()).toMatchObject({ accepted: 0, duplicates: 1, revised: 0, rejected: [] })
    expect((await teamRows()).length).toBe(count)
    const tokens = await store.get<{ n: number }>("SELECT SUM(output_tokens) AS n FROM calls WHERE member = 'bob'")
    const bobCosts = (await request(`${b.url}/api/dashboard/costs?group_by=member&range=24h`)).json().rows.find((r: any) => r.key === 'bob')
    expect(bobCosts.output_tokens).toBe(Number(tokens!.n))
  })
})
