import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { afterEach, describe, expect, it } from 'vitest'
import { DB_FILE } from '../../src/main/config/paths'
import { costs } from '../../src/main/dashboard/costs'
import { MIGRATIONS, migrate } from '../../src/main/ledger/migrations'
import { openDatabase } from '../../src/main/ledger/db'
import { SqliteStore } from '../../src/main/storage/sqlite'
import { RollupWriter } from '../../src/main/dashboard/rollup/writer'

const dirs: string[] = []
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true })
})

/**
 * The project and member groupings were added to the rollups by migrations (8 and 10) that
 * summed the calls already recorded. Plan usage (subscription calls, recorded since schema 6)
 * is no money: those sums must leave it out, as the writer does for every call since.
 */
describe('upgrading a ledger that already holds plan usage', () => {
  it('the project and member breakdowns count money only, as the model breakdown does', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'burnrate-upgrade-plan-'))
    dirs.push(dir)
    const db = new Database(join(dir, DB_FILE))
    // A ledger at schema 7 (subscription calls are recorded since schema 6).
    migrate(db, MIGRATIONS.filter((m) => m.version <= 7))
    const now = Date.now()
    const ins = db.prepare(`INSERT INTO calls (ts, provider, model, endpoint, api_key_hash, key_hint, tenant, agent, session, status, streamed,
      input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cache_write_1h_tokens, reasoning_tokens, cost_usd, priced, estimated, latency_ms, billing, project, member)
      VALUES (?, 'anthropic', 'claude', '/v1/messages', 'h', 'k', '', '', '', 200, 0, 100, 10, 0, 0, 0, 0, ?, 1, 0, 100, ?, '/src/p', 'ann')`)
    ins.run(now - 3 * 86_400_000, 5, 'subscription') // $5 of plan value, no money
    ins.run(now - 3 * 86_400_000, 1, 'api') // $1 of money
    // Fold them as the schema-7 server did (its batch writer), then upgrade.
    const { RollupWriter } = await import('../../src/main/dashboard/rollup/writer')
    new RollupWriter(db).catchUp()
    db.close()
    const up = openDatabase(join(dir, DB_FILE))
    const q = new SqliteStore(up)
    const money = up.prepare("SELECT total(cost_usd) FROM calls WHERE billing <> 'subscription'").pluck().get() as number
    const d = { q, tz: 'UTC' }
    const byModel = await costs(d as any, 'model', '30d', null, now)
    const byProject = await costs(d as any, 'project', '30d', null, now)
    const byMember = await costs(d as any, 'member', '30d', null, now)
    const sum = (c: { rows: { cost_usd: number }[] }) => c.rows.reduce((a, r) => a + r.cost_usd, 0)
    expect(money).toBe(1)
    expect(sum(byModel)).toBeCloseTo(money)
    expect(sum(byProject)).toBeCloseTo(money)
    expect(sum(byMember)).toBeCloseTo(money)
    up.close()
  })
})

/**
 * Ledgers already upgraded through 8 and 10 before that fix hold the plan value in those
 * breakdowns: version 21 repairs them from the rollups' own totals, which were always right.
 */
describe('a ledger upgraded before the backfills were fixed', () => {
  const DAY = 86_400_000

  /** A ledger at version 20 whose project and member rows hold its plan usage as money (the old backfills' sums). */
  function brokenLedger(calls: { ts: number; cost: number; billing: string; project: string; member?: string }[]): string {
    const dir = mkdtempSync(join(tmpdir(), 'burnrate-repair-plan-'))
    dirs.push(dir)
    const db = new Database(join(dir, DB_FILE))
    migrate(db, MIGRATIONS.filter((m) => m.version <= 20))
    const ins = db.prepare(`INSERT INTO calls (ts, provider, model, endpoint, api_key_hash, key_hint, tenant, agent, session, status, streamed,
      input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cache_write_1h_tokens, reasoning_tokens, cost_usd, priced, estimated, latency_ms, billing, project, member)
      VALUES (?, 'anthropic', 'claude', '/v1/messages', 'h', 'k', '', '', '', 200, 0, 100, 10, 0, 0, 0, 0, ?, 1, 0, 100, ?, ?, ?)`)
    for (const c of calls) ins.run(c.ts, c.cost, c.billing, c.project, c.member ?? 'ann')
    db.exec('DELETE FROM dash_dim_day; DELETE FROM dash_dim_hour')
    new RollupWriter(db).catchUp()
    // What the unfixed backfills left: every subscription call's value in its project's and member's rows.
    for (const t of ['dash_dim_day', 'dash_dim_hour']) {
      const grain = t === 'dash_dim_day' ? DAY : 3_600_000
      for (const c of calls.filter((x) => x.billing === 'subscription')) {
        for (const [dim, key] of [['project', c.project], ['member', c.member ?? 'ann']]) {
          db.prepare(`UPDATE ${t} SET cost_usd = cost_usd + ? WHERE dim = ? AND key = ? AND bucket = ?`).run(c.cost, dim, key, Math.floor(c.ts / grain) * grain)
        }
      }
    }
    db.close()
    return dir
  }

  function dims(db: Database.Database, dim: string): Record<string, number> {
    const rows = db.prepare("SELECT key, bucket, cost_usd FROM dash_dim_day WHERE dim = ? ORDER BY bucket, key").all(dim) as { key: string; bucket: number; cost_usd: number }[]
    return Object.fromEntries(rows.map((r) => [`${new Date(r.bucket).toISOString().slice(0, 10)} ${r.key}`, r.cost_usd]))
  }

  it('sums a day again from its calls, money only, when all of them are kept', () => {
    const day = Date.UTC(2026, 10, 10)
    const dir = brokenLedger([
      { ts: day + 3_600_000, cost: 5, billing: 'subscription', project: '/a' },
      { ts: day + 2 * 3_600_000, cost: 1.25, billing: 'api', project: '/a' },
      { ts: day + 3 * 3_600_000, cost: 7, billing: 'subscription', project: '/b', member: 'bo' },
      { ts: day + 4 * 3_600_000, cost: 0.5, billing: 'api', project: '/b', member: 'bo' },
    ])
    const db = openDatabase(join(dir, DB_FILE))
    expect(dims(db, 'project')).toEqual({ '2026-11-10 /a': 1.25, '2026-11-10 /b': 0.5 })
    expect(dims(db, 'member')).toEqual({ '2026-11-10 ann': 1.25, '2026-11-10 bo': 0.5 })
    const hour = db.prepare("SELECT total(cost_usd) FROM dash_dim_hour WHERE dim = 'project'").pluck().get()
    expect(hour).toBe(1.75)
    // Requests and tokens are as the writer counted them, plan calls included.
    expect(db.prepare("SELECT requests, input_tokens FROM dash_dim_day WHERE dim = 'project' AND key = '/a'").get()).toEqual({ requests: 2, input_tokens: 200 })
    db.close()
  })

  it('gives a day retention pruned in part its totals\' money when it has one project, and leaves a day it cannot split', () => {
    const one = Date.UTC(2026, 10, 10)
    const two = Date.UTC(2026, 10, 11)
    const dir = brokenLedger([
      { ts: one + 3_600_000, cost: 5, billing: 'subscription', project: '/a' },
      { ts: one + 2 * 3_600_000, cost: 1.25, billing: 'api', project: '/a' },
      { ts: one + 20 * 3_600_000, cost: 2, billing: 'api', project: '/a' },
      { ts: two + 3_600_000, cost: 3, billing: 'subscription', project: '/a' },
      { ts: two + 2 * 3_600_000, cost: 1, billing: 'api', project: '/b' },
      { ts: two + 20 * 3_600_000, cost: 0.5, billing: 'api', project: '/b' },
      { ts: two + 2 * DAY, cost: 0.25, billing: 'api', project: '/b' },
    ])
    // Retention took the first hours of both days.
    const raw = new Database(join(dir, DB_FILE))
    raw.prepare('DELETE FROM calls WHERE ts < ?').run(two + 10 * 3_600_000)
    raw.prepare('DELETE FROM calls WHERE ts >= ? AND ts < ?').run(two, two + 10 * 3_600_000)
    raw.prepare('UPDATE retention_state SET pruned_before = ?').run(two + 10 * 3_600_000)
    raw.close()
    const db = openDatabase(join(dir, DB_FILE))
    const p = dims(db, 'project')
    expect(p['2026-11-10 /a']).toBe(3.25)
    // Two projects, the plan call's gone: which one held it is no longer known.
    expect(p['2026-11-11 /a']).toBe(3)
    expect(p['2026-11-11 /b']).toBe(1.5)
    expect(p['2026-11-13 /b']).toBe(0.25)
    db.close()
  })

  it('leaves a right ledger as it was', () => {
    const day = Date.UTC(2026, 10, 10)
    const dir = brokenLedger([{ ts: day, cost: 0.1, billing: 'api', project: '/a' }, { ts: day + 1, cost: 0.2, billing: 'api', project: '/a' }])
    const db = openDatabase(join(dir, DB_FILE))
    expect(dims(db, 'project')).toEqual({ '2026-11-10 /a': 0.1 + 0.2 })
    db.close()
  })
})
