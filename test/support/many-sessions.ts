import { join } from 'node:path'
import { DB_FILE } from '../../src/main/config/paths'
import { RollupWriter } from '../../src/main/dashboard/rollup/writer'
import { openDatabase } from '../../src/main/ledger/db'

const COLS = [
  'ts', 'provider', 'model', 'endpoint', 'api_key_hash', 'key_hint', 'tenant', 'agent', 'session', 'project', 'status', 'streamed',
  'input_tokens', 'output_tokens', 'cache_read_tokens', 'cache_write_tokens', 'cache_write_1h_tokens', 'reasoning_tokens',
  'cost_usd', 'priced', 'estimated', 'latency_ms', 'error',
]

/**
 * `n` calls within the hour before `now`, each in its own session (`sess-0` … `sess-<n-1>`, the
 * costlier the higher its number; the cheapest, `sess-0`, has the longest project name), written straight into the ledger file of `dataDir` in one
 * transaction, then the rollups built from them as start-up does (as test/bench/cardinality.ts
 * seeds a big ledger): a year of a heavy user's sessions in seconds, for a server started on it.
 */
export function seedSessions(dataDir: string, n: number, now = Date.now()): void {
  const db = openDatabase(join(dataDir, DB_FILE))
  try {
    const insert = db.prepare(`INSERT INTO calls (${COLS.join(', ')}) VALUES (${COLS.map(() => '?').join(', ')})`)
    db.transaction(() => {
      for (let i = 0; i < n; i++) {
        insert.run([
          now - 3_600_000 + Math.floor((i * 3_000_000) / n), 'openai', 'gpt-4o-mini', 'chat.completions', 'a'.repeat(63) + (i % 8),
          `sk-…000${i % 8}`, '', 'codex', `sess-${i}`, i === 0 ? '/home/u/the-longest-project' : i % 2 ? '' : `/home/u/proj-${i % 7}`, 200, 0,
          100 + i, 50 + (i % 400), i % 3 ? 0 : 1000 + i, 0, 0, 0, 0.001 + i * 1e-7, 1, 0, 100, null,
        ])
      }
    })()
    new RollupWriter(db).catchUp()
    db.pragma('wal_checkpoint(TRUNCATE)')
  } finally {
    db.close()
  }
}
