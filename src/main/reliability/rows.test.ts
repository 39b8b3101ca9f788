import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type Database from 'better-sqlite3'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { openDatabase } from '../ledger/db'
import { Ledger } from '../ledger/ledger'
import type { CallRecord } from '../ledger/record'
import { isDatabaseProblem, sanitizeRecord } from './rows'

function call(over: Partial<CallRecord> = {}): CallRecord {
  return {
    ts: Date.now(), provider: 'openai', model: 'gpt-4o-mini', endpoint: 'chat.completions', api_key_hash: 'h', key_hint: 'sk-…abcd',
    tenant: '', agent: 'a', session: 's', status: 200, streamed: false, input_tokens: 10, output_tokens: 5, cache_read_tokens: 0,
    cache_write_tokens: 0, cache_write_1h_tokens: 0, reasoning_tokens: 0, cost_usd: 0.001, priced: true, estimated: false,
    latency_ms: 12.5, error: null, ...over,
  }
}

let dir: string
let db: Database.Database
let ledger: Ledger

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'burnrate-rows-'))
  db = openDatabase(join(dir, 'burnrate.db'))
  ledger = new Ledger(db, { flushIntervalMs: 50, maxPending: 1000, timezone: 'UTC' })
})
afterEach(() => {
  ledger.close()
  db.close()
  rmSync(dir, { recursive: true, force: true })
})

const sessions = () => (db.prepare('SELECT session FROM calls ORDER BY id').all() as { session: string }[]).map((r) => r.session)

describe('a row the database refuses', () => {
  it('does not hold back the rows around it; it is written with its fields coerced', () => {
    ledger.record(call({ session: 'before' }))
    ledger.record(call({ session: 'bad', model: undefined as any, cost_usd: NaN, status: undefined as any, agent: { x: 1 } as any }))
    ledger.record(call({ session: 'after' }))
    expect(ledger.flush()).toBe(true)
    expect(sessions()).toEqual(['before', 'bad', 'after'])
    const bad = db.prepare("SELECT model, cost_usd, status, agent FROM calls WHERE session = 'bad'").get()
    expect(bad).toEqual({ model: '', cost_usd: 0, status: 0, agent: '[object Object]' })
    expect(ledger.status).toMatchObject({ writable: true, pending: 0, dropped: 0, last_error: null })
  })

  it('a row that a rollup hook keeps refusing is dropped, counted and reported; the others are written', () => {
    ledger.onBatch((rows) => {
      if (rows.some((r) => r.session === 'poison')) throw new Error('rollup cannot take this row')
    })
    for (const s of ['a', 'poison', 'b', 'c']) ledger.record(call({ session: s }))
    ledger.flush()
    expect(sessions()).toEqual(['a', 'b', 'c'])
    expect(ledger.status.dropped).toBe(1)
    expect(ledger.status.pending).toBe(0)
    expect(ledger.status.last_error).toMatch(/dropped: rollup cannot take this row/)
    // And the next batches are written as a whole again.
    ledger.record(call({ session: 'd' }))
    ledger.flush()
    expect(sessions()).toEqual(['a', 'b', 'c', 'd'])
  })
})

describe('isDatabaseProblem', () => {
  it('tells the database\'s problems from a row\'s', () => {
    for (const code of ['SQLITE_BUSY', 'SQLITE_BUSY_SNAPSHOT', 'SQLITE_FULL', 'SQLITE_READONLY', 'SQLITE_IOERR_WRITE', 'SQLITE_LOCKED']) {
      expect(isDatabaseProblem({ code }), code).toBe(true)
    }
    for (const e of [{ code: 'SQLITE_CONSTRAINT_NOTNULL' }, { code: 'SQLITE_MISMATCH' }, new TypeError('x'), null]) {
      expect(isDatabaseProblem(e)).toBe(false)
    }
    expect(sanitizeRecord(call({ input_tokens: Infinity })).input_tokens).toBe(0)
  })
})
