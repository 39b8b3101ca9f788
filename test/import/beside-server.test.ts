import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { spawnSync } from 'node:child_process'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import Database from 'better-sqlite3'
import { budgetsOf } from '../../src/main/budgets'
import { INSERT_CALL_SQL, callValues } from '../../src/main/ledger/columns'
import { NOTICES_PER_TURN } from '../../src/main/ledger/notices'
import { makeCall } from '../dashboard/seed'
import { ADMIN_CONFIG, admin } from '../admin/support'
import { writeClaudeCodeCall } from '../support/agent-logs'
import { runCliCaptured } from '../support/cli'
import { fixture } from '../support/fixtures'
import { eventually, postJson, request } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'

/**
 * `burnrate import` run beside a server on the same SQLite file (the desktop app, say): the
 * calls it stores count in that server's spend (the tray's today, the budgets' overview) and its
 * budget meters within seconds, and never twice: not when the server was stopped while they
 * were imported, nor when its meters re-read the ledger (a rule change) before it noticed them.
 */

// A `*` rule (imported calls carry no key): a rolling hour, so no day or month boundary moves the
// test's numbers; one imported call (about $0.15) is over its limit, a proxied one ($0.0012) not.
const CONFIG = {
  ...ADMIN_CONFIG,
  timezone: 'UTC',
  import: { watch: false },
  budgets: { rules: [{ api_key_pattern: '*', window_hours: 1, window_limit_usd: 0.05, action: 'block' }] },
}

/** The built CLI (`npm run build`), run as its own process. */
const CLI = resolve(__dirname, '../../out/main/cli.js')

let upstream: MockUpstream
let logs: string
let t: TestServer

/** Imports one logged Claude Code call, older than the settle time a running server imposes, with the CLI. */
async function importOne(id: string, target: TestServer | null): Promise<number> {
  const dir = writeClaudeCodeCall(logs, id, 'claude-haiku-4-5-20251001')
  const where = target ? ['--url', target.url] : ['--local']
  const r = await runCliCaptured('import', 'claude-code', '--path', dir, '--config', t.configFile, '--data-dir', t.dir, ...where, '--json')
  expect(r.code, r.out).toBe(0)
  expect(JSON.parse(r.out).results[0]).toMatchObject({ imported: 1, deferred: 0 })
  return JSON.parse(r.out).results[0].cost_usd
}

// The agents' config files the admin API reads are in a temporary home.
const start = (dir?: string) =>
  startTestServer(CONFIG, upstream.url, dir, { create: { noticeIntervalMs: 100, agentHome: { home: join(logs, 'home'), env: { PATH: '' }, platform: 'linux' } } })

async function windowSpent(s: TestServer): Promise<number> {
  const listed = (await request(`${s.url}/api/dashboard/budgets`)).json()
  return listed.rules[0].windows.find((w: { period: string }) => w.period === 'window').spent_usd
}

async function todaySpent(s: TestServer): Promise<number> {
  const listed = (await request(`${s.url}/api/dashboard/budgets`)).json()
  return listed.overall.find((w: { period: string }) => w.period === 'daily').spent_usd
}

/** What the ledger holds of today's spend (the calls of the last 11 minutes may be yesterday's). */
function storedToday(s: TestServer): number {
  const now = new Date()
  const day = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate())
  return s.server.db.prepare('SELECT COALESCE(SUM(cost_usd), 0) FROM calls WHERE ts >= ?').pluck().get(day) as number
}

/** What the ledger holds of the last hour's spend (every call here has no key: the rule's meter). */
function storedWindow(s: TestServer): number {
  return s.server.db.prepare('SELECT COALESCE(SUM(cost_usd), 0) FROM calls WHERE ts >= ?').pluck().get(Date.now() - 3_600_000) as number
}

const near = (a: number, b: number) => Math.abs(a - b) <= 1e-12

/** The meter and the spend hold what the ledger holds (proxied calls are written within the flush interval). */
async function countedOnce(s: TestServer): Promise<void> {
  await eventually(async () => near(await windowSpent(s), storedWindow(s)) && near(await todaySpent(s), storedToday(s)))
}

const keyless = () => postJson(`${t.url}/v1/chat/completions`, { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] })

beforeAll(async () => {
  upstream = await startMockUpstream(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body: fixture('openai-chat/chat-nonstream-cached.json') }))
  logs = mkdtempSync(join(tmpdir(), 'burnrate-import-beside-'))
  t = await start()
})
afterAll(async () => {
  await t.cleanup()
  await upstream.close()
  rmSync(logs, { recursive: true, force: true })
})

describe('burnrate import beside a running server on the same SQLite file', () => {
  it('counts in its meters and its spend within seconds, and once across a restart', async () => {
    expect((await keyless()).status).toBe(200)
    const before = await eventually(async () => (await windowSpent(t)) || null)
    expect(before).toBeLessThan(0.05)
    const cost = await importOne('msg_beside_1', t)
    expect(cost).toBeGreaterThan(0.05)
    // The next call without a key is over the window's limit: refused before it goes upstream.
    await eventually(async () => (await keyless()).status === 429)
    const sent = upstream.requests.length
    const r = await keyless()
    expect(r.json().error.type).toBe('budget_exceeded')
    expect(upstream.requests.length).toBe(sent)
    await countedOnce(t)
    // Every notice read is gone from the file.
    await eventually(() => t.server.db.prepare('SELECT count(*) FROM call_notices').pluck().get() === 0)

    // Stopped, then a call imported: the restarted server reads it with the ledger, and its notice adds nothing.
    await t.stop()
    const cost2 = await importOne('msg_beside_2', null)
    t = await start(t.dir)
    expect(t.server.db.prepare('SELECT count(*) FROM call_notices').pluck().get()).toBe(1)
    await eventually(() => t.server.db.prepare('SELECT count(*) FROM call_notices').pluck().get() === 0)
    expect(cost2).toBeGreaterThan(0)
    await countedOnce(t)
    // Read once more after the notice was read (a pass of the notices, as the timer's): nothing has moved.
    t.server.context.notices!.poll()
    await countedOnce(t)
  })

  it("moves the agent's last import time (admin API, the Connect panel) within seconds", async () => {
    const lastImport = async () =>
      ((await admin(t.url, 'GET', '/agents')).json() as { agents: { agent: string; last_import_at: string | null }[] }).agents.find((a) => a.agent === 'claude-code')!.last_import_at
    // The earlier imports, from the ledger.
    const before = await lastImport()
    expect(before).not.toBeNull()
    await new Promise((r) => setTimeout(r, 5))
    await importOne('msg_beside_seen', t)
    await eventually(async () => (await lastImport())! > before!)
  })

  it('a rule change that re-reads the ledger before the notice is read counts the call once', async () => {
    // The notices are read only when the test says (the timer's interval is far away).
    await t.stop()
    t = await startTestServer(CONFIG, upstream.url, t.dir, { create: { noticeIntervalMs: 3_600_000 } })
    const notices = t.server.context.notices!
    const before = await windowSpent(t)
    const today = await todaySpent(t)
    const cost = await importOne('msg_beside_3', t)
    // A new rule re-reads the ledger: the `*` rule's meter now holds the imported call.
    const put = await admin(t.url, 'POST', '/budgets/rules', { body: { api_key_pattern: 'sk-other-*', daily_limit_usd: 5, action: 'warn' } })
    expect(put.status).toBeLessThan(300)
    expect(await windowSpent(t)).toBeCloseTo(before + cost, 12)
    // The spend loaded at start-up does not; reading the notice adds it there, and not to the meter again.
    expect(await todaySpent(t)).toBeCloseTo(today, 12)
    expect(notices.poll()).toBe(1)
    expect(await windowSpent(t)).toBeCloseTo(before + cost, 12)
    expect(await todaySpent(t)).toBeCloseTo(storedToday(t), 12)
    expect(notices.poll()).toBe(0)
    // A notice whose call is gone (retention pruned it meanwhile) is passed over and deleted, counting nothing.
    t.server.db.prepare('INSERT INTO call_notices (call_id) VALUES (?)').run(987_654_321)
    expect(notices.poll()).toBe(1)
    expect(await windowSpent(t)).toBeCloseTo(before + cost, 12)
    expect(t.server.db.prepare('SELECT count(*) FROM call_notices').pluck().get()).toBe(0)
  })

  it('a call whose log entry grew after it was imported moves the meters and the spend by the difference, once', async () => {
    // The notices are read only when the test says.
    await t.stop()
    t = await startTestServer(CONFIG, upstream.url, t.dir, { create: { noticeIntervalMs: 3_600_000 } })
    const notices = t.server.context.notices!
    // Claude Code logs an answer's first content block with a partial usage, the full one later.
    const logged = (id: string, lines: number[][]) => {
      const dir = join(logs, id)
      mkdirSync(join(dir, '-home-dev-shop'), { recursive: true })
      const ts = new Date(Date.now() - 11 * 60_000).toISOString()
      const text = lines.map(([input, output]) => JSON.stringify({
        type: 'assistant', sessionId: id, cwd: '/home/dev/shop', timestamp: ts,
        message: { id, model: 'claude-haiku-4-5-20251001', usage: { input_tokens: input, output_tokens: output } },
      }) + '\n')
      writeFileSync(join(dir, '-home-dev-shop/session.jsonl'), text.join(''))
      return dir
    }
    const run = async (dir: string) => {
      const r = await runCliCaptured('import', 'claude-code', '--path', dir, '--config', t.configFile, '--data-dir', t.dir, '--url', t.url, '--json')
      expect(r.code, r.out).toBe(0)
      return JSON.parse(r.out).results[0]
    }
    const costOf = (id: string) => t.server.db.prepare('SELECT cost_usd FROM calls WHERE response_id = ?').pluck().get(id) as number

    // Read by the server between the two imports.
    expect(await run(logged('msg_grown_1', [[1000, 10]]))).toMatchObject({ imported: 1 })
    expect(notices.poll()).toBe(1)
    await countedOnce(t)
    const first = costOf('msg_grown_1')
    expect(await run(logged('msg_grown_1', [[1000, 10], [1000, 20_000]]))).toMatchObject({ imported: 0, updated: 1 })
    expect(costOf('msg_grown_1')).toBeGreaterThan(first)
    expect(notices.poll()).toBe(1)
    await countedOnce(t)

    // Both read at once: the call counts with its grown cost, once.
    expect(await run(logged('msg_grown_2', [[1000, 10]]))).toMatchObject({ imported: 1 })
    expect(await run(logged('msg_grown_2', [[1000, 10], [1000, 20_000]]))).toMatchObject({ imported: 0, updated: 1 })
    expect(notices.poll()).toBe(2)
    await countedOnce(t)

    // Grown while the server was stopped: the restarted server reads it with the ledger, once.
    expect(await run(logged('msg_grown_3', [[1000, 10]]))).toMatchObject({ imported: 1 })
    await t.stop()
    const r = await runCliCaptured('import', 'claude-code', '--path', logged('msg_grown_3', [[1000, 10], [1000, 20_000]]), '--config', t.configFile, '--data-dir', t.dir, '--local', '--json')
    expect(JSON.parse(r.out).results[0]).toMatchObject({ imported: 0, updated: 1 })
    t = await startTestServer(CONFIG, upstream.url, t.dir, { create: { noticeIntervalMs: 3_600_000 } })
    t.server.context.notices!.poll()
    await countedOnce(t)
  })

  it('a big import is counted a few thousand calls a turn, never in one long stretch of the event loop', async () => {
    const notices = t.server.context.notices!
    const start = await windowSpent(t)
    // 5,000 calls stored as `burnrate import` stores them: each with its notice, in one transaction.
    const db = new Database(t.dbFile)
    const insert = db.prepare(INSERT_CALL_SQL)
    const notice = db.prepare('INSERT INTO call_notices (call_id) VALUES (?)')
    const values: unknown[] = []
    db.transaction(() => {
      for (let i = 0; i < 5000; i++) {
        const call = makeCall({ ts: Date.now() - 11 * 60_000, api_key_hash: '', key_hint: '', cost_usd: 0.001, source: 'import', agent: 'claude-code' })
        notice.run(Number(insert.run(callValues(call, values)).lastInsertRowid))
      }
    })()
    db.close()
    expect(notices.poll()).toBe(NOTICES_PER_TURN)
    // Read in the same turn (the rest comes as soon as this test yields).
    const meter = budgetsOf(t.server.context).engine.status().find((r) => r.rule.api_key_pattern === '*')!.keys.find((k) => k.key.hash === '')!.meter
    const spentNow = meter.periods(Date.now()).find((p) => p.period === 'window')!.spent
    expect(Math.abs(spentNow - (start + NOTICES_PER_TURN * 0.001))).toBeLessThan(1e-9)
    // The rest on the next turns, without waiting for the (hour-long) interval.
    await eventually(async () => Math.abs((await windowSpent(t)) - (start + 5000 * 0.001)) < 1e-9)
    expect(t.server.db.prepare('SELECT count(*) FROM call_notices').pluck().get()).toBe(0)
  })
})

describe('burnrate import --local (and report/status --local) beside a running server', () => {
  /** A Claude Code answer logged a minute ago, under `<root>/projects`: a server beside may still be recording it (a stream not finished). */
  function recentCall(id: string): string {
    const root = join(logs, id)
    mkdirSync(join(root, 'projects/-home-dev-shop'), { recursive: true })
    writeFileSync(join(root, 'projects/-home-dev-shop/session.jsonl'), JSON.stringify({
      type: 'assistant', sessionId: id, cwd: '/home/dev/shop', timestamp: new Date(Date.now() - 60_000).toISOString(),
      message: { id, model: 'claude-haiku-4-5-20251001', usage: { input_tokens: 1000, output_tokens: 100 } },
    }) + '\n')
    return root
  }
  const stored = (id: string) => t.server.db.prepare('SELECT count(*) FROM calls WHERE response_id = ?').pluck().get(id)

  it('import --local leaves the newest log entries for later when a server holds the data folder, on whatever port', async () => {
    const root = recentCall('msg_recent_1')
    // Another process, as a user runs it: the server is found by the data folder's server.lock.
    const r = spawnSync(process.execPath, [CLI, 'import', 'claude-code', '--path', join(root, 'projects'), '--config', t.configFile, '--data-dir', t.dir, '--local', '--json'], {
      encoding: 'utf8', timeout: 60_000,
    })
    expect(r.status, r.stderr).toBe(0)
    expect(JSON.parse(r.stdout).results[0]).toMatchObject({ imported: 0, deferred: 1 })
    expect(stored('msg_recent_1')).toBe(0)
  })

  it('report --local too, when the server answers at --url', async () => {
    const root = recentCall('msg_recent_2')
    const was = process.env.CLAUDE_CONFIG_DIR
    process.env.CLAUDE_CONFIG_DIR = root
    try {
      const r = await runCliCaptured('report', 'daily', '--config', t.configFile, '--data-dir', t.dir, '--url', t.url, '--local', '--json')
      expect(r.code, r.out).toBe(0)
    } finally {
      if (was === undefined) delete process.env.CLAUDE_CONFIG_DIR
      else process.env.CLAUDE_CONFIG_DIR = was
    }
    expect(stored('msg_recent_2')).toBe(0)
  })
})
