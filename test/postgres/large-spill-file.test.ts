import { closeSync, openSync, statSync, writeSync } from 'node:fs'
import { constants } from 'node:buffer'
import { describe, expect, it } from 'vitest'
import { PgLedger } from '../../src/main/ledger/pg/pg-ledger'
import type { CallRecord } from '../../src/main/ledger/record'
import { createLogger } from '../../src/main/log'
import { spillFile, spillFiles } from '../../src/main/reliability/spill'
import { migratePostgres } from '../../src/main/storage/postgres-migrations'
import { usePostgres } from '../support/pg-harness'

/**
 * A spill file larger than the longest string V8 makes (~512 MB: a long PostgreSQL outage on a
 * busy team) was read whole at start-up, as one string, which fails: every start logged that it
 * could not be read, left it, and its calls were never written, nor their spend counted. The file
 * here holds few calls, each line padded with spaces after its JSON (which a reader takes as it
 * takes any line), so it is that large without a long write to PostgreSQL.
 */

const h = usePostgres({ upstream: false })

function call(i: number, key: boolean): CallRecord {
  return {
    ts: Date.now(), provider: 'openai', model: 'gpt-4o-mini', endpoint: 'chat.completions', api_key_hash: 'h1', key_hint: 'sk-…abcd',
    tenant: '', agent: 'a', session: `s${i}`, status: 200, streamed: false, input_tokens: 10, output_tokens: 5, cache_read_tokens: 0,
    cache_write_tokens: 0, cache_write_1h_tokens: 0, reasoning_tokens: 0, cost_usd: (i % 7) * 0.001 + 0.0005, priced: true, estimated: false,
    latency_ms: 12, error: null, ...(key ? { call_key: `big.${i}` } : {}),
  }
}

describe('a spill file larger than the longest string (a long PostgreSQL outage)', () => {
  it('is replayed whole at start-up, with exact costs, and removed', async () => {
    const url = h.database()
    const store = h.store(url)
    await migratePostgres(store)
    const dir = h.tempDir('burnrate-pg-big-')
    const file = spillFile(dir, 1000)
    const n = 3000
    const pad = Buffer.alloc(Math.ceil((constants.MAX_STRING_LENGTH + (1 << 20)) / n), ' ')
    const fd = openSync(file, 'wx', 0o600)
    let expected = 0
    try {
      for (let i = 0; i < n; i++) {
        // Calls with keys (a PostgreSQL instance's file), and some without (a SQLite ledger's, before keys).
        const row = call(i, i % 10 !== 0)
        expected += row.cost_usd
        writeSync(fd, JSON.stringify(row))
        writeSync(fd, pad)
        writeSync(fd, '\n')
      }
      // A torn last line (a crash while writing): skipped.
      writeSync(fd, '{"ts": 1, "sess')
    } finally {
      closeSync(fd)
    }
    expect(statSync(file).size).toBeGreaterThan(constants.MAX_STRING_LENGTH)
    const lines: string[] = []
    const ledger = new PgLedger(store, { flushIntervalMs: 20, maxPending: 10_000, timezone: 'UTC', dataDir: dir, log: createLogger('info', (l) => lines.push(l)) }).start()
    try {
      expect(await ledger.flushed()).toBe(true)
      expect(lines.join('\n')).not.toMatch(/cannot read the spill file/)
      const [stored] = await store.all<{ n: number; sessions: number; cost: number }>(
        'SELECT count(*)::int AS n, count(DISTINCT session)::int AS sessions, sum(cost_usd)::float8 AS cost FROM calls',
      )
      expect(stored.n).toBe(n)
      expect(stored.sessions).toBe(n)
      expect(stored.cost).toBeCloseTo(expected, 9)
      expect(ledger.spend.key('h1').day).toBeCloseTo(expected, 9)
      expect(spillFiles(dir)).toEqual([])
      expect(lines.join('\n')).toMatch(new RegExp(`wrote ${n} call\\(s\\) kept in `))
    } finally {
      await ledger.close()
    }
  }, 120_000)
})
