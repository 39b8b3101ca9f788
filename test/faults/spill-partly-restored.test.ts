import Database from 'better-sqlite3'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { dashboard } from '../../src/main/dashboard'
import type { CallRecord } from '../../src/main/ledger/record'
import { readSpill, spillFiles, writeSpill } from '../../src/main/reliability/spill'
import { FEATURES } from '../../src/main/server/server'
import { lockFromAnotherProcess } from '../load/harness'
import { fixture } from '../support/fixtures'
import { eventually } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { startTestServer } from '../support/server'

// A spill file the database could not take at start-up (another process held the write lock)
// waits in the ledger. When the lock went, its one transaction was refused for one of its rows,
// so its calls were written one by one, and the database failed again (full) part-way: the
// calls written left the ledger's memory but not the file. A stop then, and the next start
// wrote the whole file again: the calls written before were recorded twice.

let upstream: MockUpstream
beforeAll(async () => {
  upstream = await startMockUpstream(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body: fixture('openai-chat/chat-nonstream-cached.json') }))
})
afterAll(async () => {
  await upstream.close()
})

const N = 300

function row(i: number): CallRecord {
  return {
    ts: 1_700_000_000_000 + i,
    provider: 'openai',
    model: 'gpt-4o-mini',
    endpoint: '/v1/chat/completions',
    api_key_hash: 'h',
    key_hint: 'sk-...0001',
    tenant: '',
    agent: '',
    session: `partly-${i}-${'x'.repeat(400)}`,
    status: 200,
    streamed: false,
    input_tokens: 10,
    output_tokens: 5,
    cache_read_tokens: 0,
    cache_write_tokens: 0,
    cache_write_1h_tokens: 0,
    reasoning_tokens: 0,
    cost_usd: 0.001,
    priced: true,
    estimated: false,
    // The first call's latency was NaN, which JSON keeps as null: the table refuses the row as it is.
    latency_ms: i === 0 ? (null as unknown as number) : 12,
    error: null,
  }
}

function stored(file: string): number {
  const db = new Database(file, { readonly: true, fileMustExist: true })
  try {
    return db.prepare("SELECT count(*) FROM calls WHERE session LIKE 'partly-%'").pluck().get() as number
  } finally {
    db.close()
  }
}

describe('a spill file written in part after the start, then the database fails again, then a stop', () => {
  it('each of its calls is stored once after the next start', async () => {
    const first = await startTestServer({}, upstream.url)
    const dir = first.dir
    await first.stop()
    writeSpill(dir, Array.from({ length: N }, (_, i) => row(i)), 1000)
    const lock = await lockFromAnotherProcess(first.dbFile)
    let released = false
    // The features that start without writing the file (the dashboard's rollups need a write at start).
    const features = FEATURES.slice(0, FEATURES.indexOf(dashboard))
    const t = await startTestServer({}, upstream.url, dir, { create: { startupBusyMs: 300, features } })
    try {
      expect(t.server.ledger.status.pending).toBe(N)
      // The database fills up (as in test/faults/database.test.ts): room for some of the calls only.
      const db = t.server.db
      db.pragma(`max_page_count = ${(db.pragma('page_count', { simple: true }) as number) + 8}`)
      await lock.release()
      released = true
      // The lock gone: the calls are written one by one (the first is refused as it is) until the database is full.
      await eventually(() => t.server.ledger.status.pending < N && /full/i.test(t.server.ledger.status.last_error ?? ''))
      const written = stored(t.dbFile)
      expect(written).toBeGreaterThan(0)
      expect(written).toBe(N - t.server.ledger.status.pending)
      await t.stop()
      // What the file holds is what is still to be written.
      expect(spillFiles(dir)).toHaveLength(1)
      expect(readSpill(spillFiles(dir)[0])).toHaveLength(N - written)
      const again = await startTestServer({}, upstream.url, dir)
      try {
        expect(spillFiles(dir)).toHaveLength(0)
        expect(stored(again.dbFile)).toBe(N)
      } finally {
        await again.cleanup()
      }
    } finally {
      if (!released) await lock.release()
      await t.stop()
    }
  })
})
