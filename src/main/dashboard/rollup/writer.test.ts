import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type Database from 'better-sqlite3'
import { afterEach, describe, expect, it } from 'vitest'
import { openDatabase } from '../../ledger/db'
import { type RollupInput, RollupWriter } from './writer'

const dirs: string[] = []
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true })
})

function freshDb(): Database.Database {
  const dir = mkdtempSync(join(tmpdir(), 'burnrate-rollup-'))
  dirs.push(dir)
  return openDatabase(join(dir, 'burnrate.db'))
}

const TABLES = ['dash_5m', 'dash_hour', 'dash_day', 'dash_dim_hour', 'dash_dim_day', 'dash_session']

function dump(db: Database.Database): Record<string, unknown[]> {
  const out: Record<string, unknown[]> = {}
  for (const t of TABLES) out[t] = db.prepare(`SELECT * FROM ${t} ORDER BY 1, 2, 3, 4, 5`).raw().all()
  return out
}

/** Runs of calls from one caller (as agents send them), broken by other callers and by bucket edges. */
function runsOfCalls(): RollupInput[] {
  const base = Date.UTC(2026, 0, 5, 10, 58, 0)
  const callers = [
    { tenant: '', model: 'gpt-4o-mini', provider: 'openai', agent: 'codex', session: 's1', api_key_hash: 'a'.repeat(64), key_hint: 'sk-…aaaa' },
    { tenant: 'acme', model: 'gpt-4o-mini', provider: 'openai', agent: 'codex', session: 's1', api_key_hash: 'a'.repeat(64), key_hint: 'sk-…aaaa' },
    { tenant: '', model: 'claude-sonnet-4-5', provider: 'anthropic', agent: 'claude-code', session: '', api_key_hash: 'b'.repeat(64), key_hint: 'sk-…bbbb' },
    { tenant: '', model: 'gpt-4o-mini', provider: 'openai', agent: 'codex', session: 's2', api_key_hash: 'a'.repeat(64), key_hint: 'sk-…aaaa' },
    // The same key under another hint: one api_key grouping row keeps the first hint.
    { tenant: '', model: 'gpt-4o-mini', provider: 'openai', agent: 'codex', session: 's1', api_key_hash: 'a'.repeat(64), key_hint: 'sk-…AAAA' },
  ]
  const rows: RollupInput[] = []
  let ts = base
  for (let i = 0; i < 400; i++) {
    const c = callers[Math.floor(i / 7) % callers.length]
    ts += 1_000 + ((i * 7919) % 9_000) // about 37 minutes: crosses 5-minute edges and the hour at 11:00
    rows.push({
      ...c,
      ts,
      status: [200, 200, 429, 200, 500, 499, 200][i % 7],
      input_tokens: 100 + i,
      output_tokens: 7 * i,
      cache_read_tokens: i % 3,
      cache_write_tokens: i % 5,
      cost_usd: 0.000_123_4 * ((i % 11) + 1) + i * 1e-9,
      latency_ms: 1 + ((i * 37) % 4000),
    })
  }
  return rows
}

describe('RollupWriter', () => {
  it('folds runs of calls from one caller in one batch exactly as one call at a time', () => {
    const rows = runsOfCalls()
    const batched = freshDb()
    const single = freshDb()
    try {
      const a = new RollupWriter(batched)
      batched.transaction(() => a.onBatch(rows))()
      const b = new RollupWriter(single)
      for (const r of rows) single.transaction(() => b.onBatch([r]))()
      const got = dump(batched)
      expect(got.dash_5m.length).toBeGreaterThan(1)
      expect(got.dash_hour.length).toBeGreaterThan(1)
      expect(got).toEqual(dump(single))
    } finally {
      batched.close()
      single.close()
    }
  })
})
