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
