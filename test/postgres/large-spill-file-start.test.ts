import { closeSync, openSync, writeSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { startBuiltServer } from '../load/harness'
import { until, usePostgres } from '../support/pg-harness'
import { spillFile, spillFiles } from '../../src/main/reliability/spill'
import { migratePostgres } from '../../src/main/storage/postgres-migrations'

/**
 * A PostgreSQL instance's own spill file is calls only, as large as a long outage made it. At
 * every start on PostgreSQL the spill files are looked through for the rows a SQLite ledger keeps
 * with its calls (budget holds, key patterns: storage/spilled-side.ts), and that read held every
 * call of the file at once: a file of a few million calls (some GB) took more memory than the
 * process has, and the start failed with it every time, the proxy never up. Here the built server
 * runs with a heap smaller than its file's calls, as a small machine's is smaller than a large
 * file's (the file smaller too, its calls stored sooner).
 */

const h = usePostgres({ upstream: false })

const N = 15_000
/** Node's heap for the server (MB): room for the server and a batch of calls, not for the N calls at once (about 5 KB each). */
const HEAP_MB = 64

/** A deep working directory (Linux allows 4,096 bytes): fewer calls fill the heap, and PostgreSQL stores them sooner. */
const PROJECT = `/home/user/${'work/'.repeat(790)}app`

function call(i: number): Record<string, unknown> {
  return {
    ts: Date.now() - 60_000, provider: 'anthropic', model: 'claude-sonnet-4-5-20250929', endpoint: 'messages', api_key_hash: 'a'.repeat(64),
    key_hint: 'sk-ant-…abcd', tenant: '', agent: 'claude-code', session: `0b8d3c1e-5f7a-4c2e-9d1b-${String(i).padStart(12, '0')}`, status: 200,
    streamed: true, input_tokens: 1234, output_tokens: 567, cache_read_tokens: 45678, cache_write_tokens: 1200, cache_write_1h_tokens: 0,
    reasoning_tokens: 0, cost_usd: (i % 7) * 0.001 + 0.0005, priced: true, estimated: false, latency_ms: 4567, error: null,
    requested_model: 'claude-sonnet-4-5', usage_extra: null, response_id: `msg_01ABCDEFGHIJKLMNOP${i}`, source: 'proxy', billing: 'api',
    project: PROJECT, member: '', call_key: `AbCdEfGhIjKl.${i.toString(36)}`,
  }
}

describe('a start on PostgreSQL with a spill file of more calls than its memory holds', () => {
  // Before: the process ran out of memory before it listened (FATAL ERROR: Reached heap limit).
  it('starts, and stores each call once with its exact cost', async () => {
    const url = h.database()
    const store = h.store(url)
    await migratePostgres(store)
    const dir = h.tempDir('burnrate-pg-big-start-')
    const file = spillFile(dir, 1000)
    let expected = 0
    const fd = openSync(file, 'wx', 0o600)
    try {
      let chunk: string[] = []
      for (let i = 0; i < N; i++) {
        const row = call(i)
        expected += row.cost_usd as number
        chunk.push(JSON.stringify(row))
        if (chunk.length === 10_000) {
          writeSync(fd, chunk.join('\n') + '\n')
          chunk = []
        }
      }
      if (chunk.length > 0) writeSync(fd, chunk.join('\n') + '\n')
    } finally {
      closeSync(fd)
    }
    const server = await startBuiltServer({ timezone: 'UTC', storage: { url } }, 'http://127.0.0.1:9', dir, [`--max-old-space-size=${HEAP_MB}`])
    try {
      await until('the calls of the file stored', async () => spillFiles(dir).length === 0, 300_000)
      const [stored] = await store.all<{ n: number; keys: number; cost: number }>(
        'SELECT count(*)::int AS n, count(DISTINCT call_key)::int AS keys, sum(cost_usd)::float8 AS cost FROM calls',
      )
      expect(stored).toEqual({ n: N, keys: N, cost: expect.closeTo(expected, 6) })
      expect(await server.stop()).toBe(0)
    } finally {
      await server.dispose()
    }
  }, 600_000)
})
