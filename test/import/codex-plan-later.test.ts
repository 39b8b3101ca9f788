import { appendFileSync, cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import type Database from 'better-sqlite3'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { ensureReportZone } from '../../src/main/dashboard/rollup/report-build'
import { importLogs } from '../../src/main/import/importer'
import { INSERT_CALL_SQL, callValues } from '../../src/main/ledger/columns'
import { openDatabase } from '../../src/main/ledger/db'
import { CallNotices } from '../../src/main/ledger/notices'
import { Pricer } from '../../src/main/pricing/price'
import { makeCall } from '../dashboard/seed'
import { PLAN, planNamed as planNamedLine, sessionHead, tokenCount, twoResponses } from './codex-plan-rollout'

/**
 * An older Codex writes no ChatGPT account in session_meta, and its session's first token_count
 * events may carry no rate limits: the plan is named only by a later event. Calls imported before
 * that event (a session read while being written) were stored as API money; once a later read of
 * the grown rollout names the plan, they are plan usage, as a first read of the whole rollout
 * stores them: the dashboard no longer shows money the user never spent.
 */
const pricer = new Pricer()
const T = Date.parse('2026-11-20T10:00:00.000Z')
const LATER = T + 3_600_000
const FILE = '2026/11/20/rollout-2026-11-20T10-00-00-abc.jsonl'
let dir: string
let db: Database.Database
const open: Database.Database[] = []
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'burnrate-codex-plan-later-'))
  db = ledger(join(dir, 'b.db'))
})
afterEach(() => {
  for (const d of open.splice(0)) d.close()
  rmSync(dir, { recursive: true, force: true })
})

/** A ledger file with its report rollup (`burnrate report`'s days and months) built, in UTC. */
function ledger(file: string): Database.Database {
  const d = openDatabase(file)
  open.push(d)
  ensureReportZone(d, 'UTC')
  return d
}


/** A rollout in `root` of an older Codex: no account in session_meta, two responses whose events carry no rate limits. */
function rollout(root: string): string {
  mkdirSync(join(root, '2026/11/20'), { recursive: true })
  writeFileSync(join(root, FILE),
    twoResponses(T))
  return root
}
/** The session's third response, whose event names the plan. */
const planNamed = (root: string) => appendFileSync(join(root, FILE), planNamedLine(T))

const calls = (d = db) => d.prepare('SELECT provider, billing, cost_usd, source, input_tokens FROM calls ORDER BY ts').all() as any[]
const ROLLUPS = ['dash_5m', 'dash_hour', 'dash_day', 'dash_dim_hour', 'dash_dim_day', 'dash_session', 'dash_report_day', 'dash_report_month', 'dash_report_session']
const SUMS = ['requests', 'cost_usd', 'plan_value_usd', 'input_tokens', 'output_tokens', 'cache_read_tokens', 'cache_write_tokens']
/**
 * Every rollup table's rows as the dashboard reads them (a row at 0 requests, $0 and no tokens is
 * no group: one a call left stays so, as a superseded call's does), sums of money to 12
 * significant digits (summed in another order, the last bit may differ).
 */
function rollups(d: Database.Database): Record<string, unknown[]> {
  const out: Record<string, unknown[]> = {}
  for (const t of ROLLUPS) {
    out[t] = (d.prepare(`SELECT * FROM ${t}`).all() as Record<string, unknown>[])
      .filter((r) => SUMS.some((k) => r[k] !== undefined && r[k] !== 0))
      .map((r) => Object.fromEntries(Object.entries(r).map(([k, v]) => [k, typeof v === 'number' && !Number.isInteger(v) ? Number(v.toPrecision(12)) : v])))
      .sort((a, b) => (JSON.stringify(a) < JSON.stringify(b) ? -1 : 1))
  }
  return out
}

describe('a Codex session whose plan a later event names', () => {
  it("has the calls imported before as plan usage once the grown rollout is read, as a first read of it stores them (no money left, none counted twice)", async () => {
    const root = rollout(join(dir, 'sessions'))
    expect(await importLogs(db, { agent: 'codex', paths: [root], pricer, now: LATER })).toMatchObject({ imported: 2 })
    expect(calls().map((c) => [c.provider, c.billing])).toEqual([['openai', 'api'], ['openai', 'api']])

    planNamed(root)
    expect(await importLogs(db, { agent: 'codex', paths: [root], pricer, now: LATER })).toMatchObject({ imported: 1, reclassed: 2, duplicates: 0 })
    const r = calls()
    expect(r.map((c) => [c.provider, c.billing, c.source, c.input_tokens])).toEqual([
      ['chatgpt', 'subscription', 'import', 5000], ['chatgpt', 'subscription', 'import', 6000], ['chatgpt', 'subscription', 'import', 7000],
    ])
    const value = r.reduce((s, c) => s + c.cost_usd, 0)
    expect(value).toBeGreaterThan(0)
    // The dashboard: no money, the three calls' plan value, three requests.
    const day = db.prepare('SELECT sum(cost_usd) AS money, sum(plan_value_usd) AS plan, sum(requests) AS requests FROM dash_day').get() as any
    expect(day.money).toBe(0)
    expect(day.plan).toBeCloseTo(value, 12)
    expect(day.requests).toBe(3)

    // Every rollup as a first read of the whole rollout into a new ledger has it.
    const fresh = ledger(join(dir, 'fresh.db'))
    expect(await importLogs(fresh, { agent: 'codex', paths: [root], pricer, now: LATER })).toMatchObject({ imported: 3 })
    expect(calls(fresh)).toEqual(r)
    const now = rollups(db)
    expect(now.dash_report_day.length).toBeGreaterThan(0)
    expect(now).toEqual(rollups(fresh))

    // Read again: nothing more moves.
    planNamed(root)
    expect(await importLogs(db, { agent: 'codex', paths: [root], pricer, now: LATER })).toMatchObject({ imported: 0, updated: 0, reclassed: 0, duplicates: 3 })
    expect(rollups(db)).toEqual(rollups(fresh))
  })

  it("puts a call re-classed in its first hours of a day in that day's report rows, not in the day before's of the plan's calls", async () => {
    // A plan's session the evening before (its login named from the first line), then the older Codex's session just after midnight.
    const root = join(dir, 'sessions')
    const EVENING = Date.parse('2026-11-19T20:00:00.000Z')
    const NIGHT = Date.parse('2026-11-20T00:30:00.000Z')
    mkdirSync(join(root, '2026/11/19'), { recursive: true })
    writeFileSync(join(root, '2026/11/19/rollout-2026-11-19T20-00-00-eve.jsonl'),
      sessionHead(EVENING, 'eve', '/home/dev/x', { creator_account_id: 'acct-1' }) +
      tokenCount(EVENING + 1000, [4000, 300], [4000, 300], null))
    const night = join(root, '2026/11/20/rollout-2026-11-20T00-30-00-night.jsonl')
    mkdirSync(join(root, '2026/11/20'), { recursive: true })
    writeFileSync(night,
      sessionHead(NIGHT, 'night', '/home/dev/x') +
      tokenCount(NIGHT + 1000, [5000, 400], [5000, 400], null))
    expect(await importLogs(db, { agent: 'codex', paths: [root], pricer, now: LATER })).toMatchObject({ imported: 2 })
    // The same running total again (no new call), now with the plan's rate limits.
    appendFileSync(night, tokenCount(NIGHT + 20_000, [5000, 400], [5000, 400], PLAN))
    expect(await importLogs(db, { agent: 'codex', paths: [root], pricer, now: LATER })).toMatchObject({ imported: 0, reclassed: 1 })

    const fresh = ledger(join(dir, 'fresh.db'))
    expect(await importLogs(fresh, { agent: 'codex', paths: [root], pricer, now: LATER })).toMatchObject({ imported: 2 })
    const days = (d: Database.Database) => d.prepare("SELECT day, provider, requests, imported FROM dash_report_day WHERE dim = '' AND requests <> 0 ORDER BY day, provider").all()
    expect(days(db)).toEqual([
      { day: Date.parse('2026-11-19T00:00:00Z'), provider: 'chatgpt', requests: 1, imported: 1 },
      { day: Date.parse('2026-11-20T00:00:00Z'), provider: 'chatgpt', requests: 1, imported: 1 },
    ])
    expect(rollups(db)).toEqual(rollups(fresh))
  })

  it('leaves a call the proxy recorded as it was: the proxy saw the key it was sent with', async () => {
    db.prepare(INSERT_CALL_SQL).run(callValues(makeCall({
      ts: T + 500, provider: 'openai', billing: 'api', model: 'gpt-5-codex', endpoint: 'responses', agent: 'codex', source: 'proxy',
      response_id: '', input_tokens: 5000, output_tokens: 400, cost_usd: 0.01,
    }), []))
    const root = rollout(join(dir, 'sessions'))
    expect(await importLogs(db, { agent: 'codex', paths: [root], pricer, now: LATER })).toMatchObject({ matched: 1, imported: 1 })
    planNamed(root)
    expect(await importLogs(db, { agent: 'codex', paths: [root], pricer, now: LATER })).toMatchObject({ imported: 1, reclassed: 1 })
    expect(calls().map((c) => [c.provider, c.billing, c.source, c.cost_usd === 0.01])).toEqual([
      ['openai', 'api', 'proxy', true], ['chatgpt', 'subscription', 'import', false], ['chatgpt', 'subscription', 'import', false],
    ])
  })

  it("re-classes a fork's own calls, not its copies of its parent's: the parent's rollout named no plan", async () => {
    const root = join(dir, 'sessions')
    cpSync(resolve(__dirname, '../fixtures/codex-fork/sessions'), root, { recursive: true })
    const now = Date.parse('2026-11-03T00:00:00Z')
    expect(await importLogs(db, { agent: 'codex', paths: [root], pricer, now })).toMatchObject({ imported: 3 })
    // The fork's next response, whose event names the plan.
    const fork = join(root, '2026/11/02/rollout-2026-11-02T10-02-47-019a4b9f-0a1b-7c2d-9e3f-4a5b6c7d8e90.jsonl')
    appendFileSync(fork, tokenCount(Date.parse('2026-11-02T10:04:00Z'), [40000, 1500], [11050, 595], PLAN))
    expect(await importLogs(db, { agent: 'codex', paths: [root], pricer, now })).toMatchObject({ imported: 1, reclassed: 1 })
    const rows = db.prepare('SELECT session, provider, billing, input_tokens FROM calls ORDER BY ts').all() as any[]
    expect(rows.map((r) => [r.session.slice(0, 8), r.provider, r.billing, r.input_tokens])).toEqual([
      ['019a4b1c', 'openai', 'api', 8810], ['019a4b1c', 'openai', 'api', 9650], ['019a4b9f', 'chatgpt', 'subscription', 10490], ['019a4b9f', 'chatgpt', 'subscription', 11050],
    ])
  })
})

describe('a Codex session whose plan a later event names, imported by `burnrate import` beside a server on the same file', () => {
  /** What a server's spend tracker reads of the notices (its own connection): the money it counts, by provider. */
  function besideServer() {
    const own = new (db.constructor as typeof Database)(join(dir, 'b.db'))
    const notices = new CallNotices(own)
    const money: Record<string, number> = {}
    const add = (provider: string, usd: number) => void (money[provider] = (money[provider] ?? 0) + usd)
    notices.read({
      through: 0,
      take: (calls) => calls.forEach((c) => c.billing !== 'subscription' && add(c.provider, c.cost_usd)),
      moved: (moves) => moves.forEach((m) => add(m.provider, m.delta)),
    })
    return {
      money,
      poll: () => notices.poll(),
      close: () => {
        notices.close()
        own.close()
      },
    }
  }
  const beside = { agent: 'codex' as const, pricer, now: LATER, announce: true }

  for (const read of ['between the two imports', 'only after both']) {
    it(`has the money it counted leave it, under the provider it counted it under (notices read ${read})`, async () => {
      const server = besideServer()
      try {
        const root = rollout(join(dir, 'sessions'))
        expect(await importLogs(db, { ...beside, paths: [root] })).toMatchObject({ imported: 2 })
        const cost = (db.prepare('SELECT sum(cost_usd) FROM calls').pluck().get() as number)
        expect(cost).toBeGreaterThan(0)
        if (read === 'between the two imports') {
          server.poll()
          expect(server.money).toEqual({ openai: cost })
        }
        planNamed(root)
        expect(await importLogs(db, { ...beside, paths: [root] })).toMatchObject({ imported: 1, reclassed: 2 })
        server.poll()
        expect(Object.keys(server.money)).toEqual(['openai'])
        expect(server.money.openai).toBeCloseTo(0, 12)
      } finally {
        server.close()
      }
    })
  }
})
