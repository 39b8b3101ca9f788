import { readFileSync } from 'node:fs'
import net from 'node:net'
import Database from 'better-sqlite3'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createLogger } from '../../src/main/log'
import { keyHash } from '../dashboard/seed'
import { fixture } from '../support/fixtures'
import { eventually, postJson, request } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { ledgerRows } from '../support/ledger-rows'
import { type TestServer, startTestServer } from '../support/server'

const ALICE = 'team-token-alice-7f3c9a1e5b'
const BOB = 'team-token-bob-2d8e4f6a0c'
const ALICE_KEY = 'sk-proj-alice-raw-key-1111aaaa'
const BOB_KEY = 'sk-proj-bob-raw-key-2222bbbb'

let upstream: MockUpstream
let port: number
const logs: string[] = []
const log = () => createLogger('debug', (l) => logs.push(l))
const servers: TestServer[] = []

async function freePort(): Promise<number> {
  const s = net.createServer()
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r))
  const p = (s.address() as net.AddressInfo).port
  await new Promise((r) => s.close(r))
  return p
}

async function start(config: Record<string, any>): Promise<TestServer> {
  const t = await startTestServer({ timezone: 'UTC', ...config }, upstream.url, undefined, { log: log() })
  servers.push(t)
  return t
}

function desktop(token: string): Promise<TestServer> {
  return start({ team: { url: `http://127.0.0.1:${port}`, token, max_backoff_ms: 500 } })
}

function teamServer(): Promise<TestServer> {
  return start({ server: { port }, team: { members: [{ name: 'alice', token: ALICE }, { name: 'bob', token: BOB }] } })
}

async function call(t: TestServer, key: string): Promise<void> {
  const r = await postJson(
    `${t.url}/v1/chat/completions`,
    { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] },
    { authorization: `Bearer ${key}`, 'x-burnrate-agent': 'bot', 'x-burnrate-session': 'run-1' },
  )
  expect(r.status).toBe(200)
}

function rows(t: TestServer, where = '1 = 1'): any[] {
  return ledgerRows(t.dbFile, where)
}

const health = async (t: TestServer) => (await request(`${t.url}/api/health`)).json()

beforeAll(async () => {
  upstream = await startMockUpstream(() => ({
    status: 200,
    headers: { 'content-type': 'application/json' },
    body: fixture('openai-chat/chat-nonstream-cached.json'),
  }))
  port = await freePort()
})
afterAll(async () => {
  for (const s of servers) await s.cleanup()
  await upstream.close()
})

describe('a desktop reporting to a team server', () => {
  let alice: TestServer
  let team: TestServer

  it('keeps working while the team server is down, and sends its backlog once it is back, even across a restart', async () => {
    alice = await desktop(ALICE)
    for (let i = 0; i < 3; i++) await call(alice, ALICE_KEY)
    const down = await eventually(async () => {
      const h = (await health(alice)).team
      return h?.last_error && h.backlog === 3 ? h : null
    })
    expect(down.url).toBe(`http://127.0.0.1:${port}`)
    expect(down.last_error).toMatch(/cannot reach the team server/)
    expect(down.retry_at).not.toBeNull()
    // The backlog is in the local database: a restart resumes it.
    alice = await alice.restart()
    servers.push(alice)
    expect((await health(alice)).team.backlog).toBe(3)

    team = await teamServer()
    await eventually(async () => (await health(alice)).team.backlog === 0 && rows(team).length === 3, 30_000)
    const sent = rows(alice)
    const got = rows(team)
    expect(got.map((r) => [r.member, r.origin_id])).toEqual(sent.map((r) => ['alice', r.id]))
    // Priced as the desktop recorded it, to the last bit; attribution kept; the key only as its hash.
    expect(got.map((r) => r.cost_usd)).toEqual(sent.map((r) => r.cost_usd))
    expect(got[0]).toMatchObject({ api_key_hash: keyHash(ALICE_KEY), key_hint: 'sk-…aaaa', agent: 'bot', session: 'run-1', source: 'proxy' })
    const h = (await health(alice)).team
    expect(h).toMatchObject({ backlog: 0, sent: 3, rejected: 0, last_error: null, retry_at: null })
  })

  it('sends new calls soon after they are made', async () => {
    await call(alice, ALICE_KEY)
    await eventually(() => rows(team).length === 4, 30_000)
  })

  it('does not count a replayed batch twice', async () => {
    // The desktop forgets what the team server acknowledged and sends everything again.
    await alice.stop()
    const db = new Database(alice.dbFile)
    db.prepare('UPDATE team_cursor SET last_id = 0').run()
    db.close()
    alice = await alice.restart()
    servers.push(alice)
    await eventually(async () => (await health(alice)).team.sent === 4, 30_000)
    expect(rows(team)).toHaveLength(4)
    expect((await health(alice)).team.backlog).toBe(0)
  })

  it('shows each member\'s exact spend in the team\'s member breakdown', async () => {
    const bob = await desktop(BOB)
    for (let i = 0; i < 2; i++) await call(bob, BOB_KEY)
    await eventually(() => rows(team, "member = 'bob'").length === 2, 30_000)
    const spend = (t: TestServer) => rows(t).reduce((s, r) => s + r.cost_usd, 0)
    const costs = (await request(`${team.url}/api/dashboard/costs?group_by=member&range=24h`)).json()
    expect(costs.rows.map((r: any) => [r.key, r.requests, r.cost_usd])).toEqual([
      ['alice', 4, spend(alice)],
      ['bob', 2, spend(bob)],
    ])
    const summary = (await request(`${team.url}/api/dashboard/summary`)).json()
    expect(summary.today_requests).toBe(6)
  })

  it('records nothing from a desktop with a wrong token, and says why', async () => {
    const mallory = await desktop('team-token-mallory-9c7e5a3b1d')
    await call(mallory, ALICE_KEY)
    const h = await eventually(async () => {
      const x = (await health(mallory)).team
      return x.last_error ? x : null
    })
    expect(h.last_error).toMatch(/refused the calls with 401/)
    expect(h.backlog).toBe(1)
    expect(rows(team)).toHaveLength(6)
  })

  it('never puts a raw API key or a team token in the team\'s database or any log', async () => {
    await team.server.ledger.flushed()
    const files = [team.dbFile, `${team.dbFile}-wal`].map((f) => {
      try {
        return readFileSync(f).toString('latin1')
      } catch {
        return ''
      }
    })
    const all = logs.join('')
    for (const secret of [ALICE_KEY, BOB_KEY, ALICE, BOB, 'team-token-mallory-9c7e5a3b1d']) {
      for (const f of files) expect(f.includes(secret)).toBe(false)
      expect(all.includes(secret)).toBe(false)
    }
    expect(all).toContain(`team: sending recorded calls to http://127.0.0.1:${port}`)
  })
})

describe('a team server that never answers', () => {
  it('neither slows the proxy nor holds up a shutdown', async () => {
    // Accepts connections and reads, never answers.
    const sockets = new Set<net.Socket>()
    const silent = net.createServer((s) => {
      sockets.add(s)
      s.on('error', () => {})
      s.resume()
    })
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r))
    try {
      const d = await start({ team: { url: `http://127.0.0.1:${(silent.address() as net.AddressInfo).port}`, token: ALICE } })
      for (let i = 0; i < 3; i++) await call(d, ALICE_KEY)
      // The sender is waiting on the silent server with a batch (the calls are still owed).
      await eventually(() => sockets.size > 0)
      expect((await health(d)).team).toMatchObject({ backlog: 3, last_error: null })
      await call(d, ALICE_KEY)
      // Stopping abandons the request under way (its connection is closed) instead of waiting out its 30 s.
      const stopping = d.stop()
      await eventually(() => [...sockets].every((x) => x.destroyed))
      await stopping
      expect(rows(d)).toHaveLength(4)
    } finally {
      for (const s of sockets) s.destroy()
      await new Promise((r) => silent.close(r))
    }
  })
})
