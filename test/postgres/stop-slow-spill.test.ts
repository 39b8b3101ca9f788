import { afterEach, describe, expect, it, vi } from 'vitest'
import { PgLedger } from '../../src/main/ledger/pg/pg-ledger'
import type { CallRecord } from '../../src/main/ledger/record'
import { createLogger } from '../../src/main/log'
import { readSpill, spillFiles } from '../../src/main/reliability/spill'
import { usePostgres } from '../support/pg-harness'

/**
 * PostgreSQL away and the data folder on a slow disk that still works (a busy network mount):
 * thousands of calls queued at the stop take longer than `keepWaitMs` to reach the spill file,
 * but bytes keep reaching it. The stop gave up at `keepWaitMs` after it began (c0e969ce, for a
 * disk that never answers), and the process exited with the calls not yet written: money records
 * an earlier build, which waited for good, kept. The slow disk: each write of the spill file takes
 * at most 8 KiB (the rest comes in later writes, as a write may) after a short pause.
 */

const slow = vi.hoisted(() => ({ on: false, writes: 0 }))

vi.mock('node:fs/promises', async (importOriginal) => {
  const real = await importOriginal<typeof import('node:fs/promises')>()
  const open: typeof real.open = async (file, ...rest) => {
    const h = await real.open(file, ...rest)
    if (!slow.on || !String(file).includes('ledger-spill-')) return h
    const write = h.write.bind(h) as (buf: Buffer, off: number, len: number, pos: number) => Promise<{ bytesWritten: number; buffer: Buffer }>
    ;(h as unknown as { write: typeof write }).write = async (buf, off, len, pos) => {
      await new Promise((r) => setTimeout(r, 10))
      slow.writes++
      return write(buf, off, Math.min(len, 8192), pos)
    }
    return h
  }
  return { ...real, open, default: { ...real, open } }
})

const h = usePostgres({ upstream: false })

afterEach(() => {
  slow.on = false
})

function call(i: number): CallRecord {
  return {
    ts: Date.now(), provider: 'openai', model: 'gpt-4o-mini', endpoint: 'chat.completions', api_key_hash: 'h1', key_hint: 'sk-…abcd',
    tenant: '', agent: 'a', session: `s${i}`, status: 200, streamed: false, input_tokens: 10, output_tokens: 5, cache_read_tokens: 0,
    cache_write_tokens: 0, cache_write_1h_tokens: 0, reasoning_tokens: 0, cost_usd: 0.001, priced: true, estimated: false,
    latency_ms: 12, error: null,
  }
}

describe('a stop while PostgreSQL is away and the spill file is on a slow disk that works', () => {
  it('waits while bytes keep reaching the file: every queued call is in it when the stop returns', async () => {
    slow.on = true
    const lines: string[] = []
    const dir = h.tempDir('burnrate-pg-slow-')
    const away = h.store('postgres://burnrate:hunter2@127.0.0.1:1/none')
    const ledger = new PgLedger(away, {
      flushIntervalMs: 20, maxPending: 100_000, timezone: 'UTC', dataDir: dir, secret: 'hunter2', closeWaitMs: 300, keepWaitMs: 1000,
      log: createLogger('info', (l) => lines.push(l)),
    }).start()
    const n = 5000
    for (let i = 0; i < n; i++) ledger.record(call(i))
    expect(await ledger.close()).toBe(false)
    expect(lines.join('\n')).not.toMatch(/had not ended/)
    const files = spillFiles(dir)
    expect(files).toHaveLength(1)
    const kept = readSpill(files[0])
    expect(kept).toHaveLength(n)
    expect(new Set(kept.map((r) => r.session)).size).toBe(n)
    expect(Math.round(kept.reduce((s, r) => s + r.cost_usd, 0) * 1000)).toBe(n)
    expect(lines.join('\n')).toMatch(new RegExp(`${n} call\\(s\\) kept in `))
    // The file took many slow writes (more than fit in keepWaitMs), all ended before the stop returned.
    expect(slow.writes).toBeGreaterThan(100)
  }, 60_000)
})
