import type Database from 'better-sqlite3'
import { type CallRecord, RECORD_DEFAULTS } from './record'

/** The columns of `calls` that a recorded call fills, in the order of `insertCallSql`. */
export const CALL_COLUMNS = [
  'ts', 'provider', 'model', 'endpoint', 'api_key_hash', 'key_hint', 'tenant', 'agent', 'session', 'status',
  'streamed', 'input_tokens', 'output_tokens', 'cache_read_tokens', 'cache_write_tokens', 'cache_write_1h_tokens',
  'reasoning_tokens', 'cost_usd', 'priced', 'estimated', 'latency_ms', 'error',
  'response_id', 'source', 'billing', 'project', 'member', 'requested_model', 'usage_extra',
] as const

const DEFAULTS: Partial<Record<(typeof CALL_COLUMNS)[number], unknown>> = { ...RECORD_DEFAULTS, requested_model: null, usage_extra: null }

/** Positional parameters: binding an array is cheaper than looking each name up on an object. */
export const INSERT_CALL_SQL = `INSERT INTO calls (${CALL_COLUMNS.join(', ')}) VALUES (${CALL_COLUMNS.map(() => '?').join(', ')})`

/** Fills `into` with the row's values in column order (flags as 0/1). */
export function callValues(r: CallRecord, into: unknown[]): unknown[] {
  for (let i = 0; i < CALL_COLUMNS.length; i++) {
    const c = CALL_COLUMNS[i]
    const v = r[c]
    into[i] = typeof v === 'boolean' ? (v ? 1 : 0) : v === undefined ? DEFAULTS[c] : v
  }
  return into
}

/**
 * The SQLite ledger's insert: CALL_COLUMNS then `call_key` (./call-keys.ts). A call whose key is
 * already stored inserts nothing (its batch written again: a kill after a spill file's replay, a
 * write thread given up after it committed); a call without a key is inserted as always.
 */
export const INSERT_KEYED_CALL_SQL = `INSERT INTO calls (${CALL_COLUMNS.join(', ')}, call_key) VALUES (${CALL_COLUMNS.map(() => '?').join(', ')}, ?)
  ON CONFLICT DO NOTHING`

/**
 * Inserts `rows` with `insert` (INSERT_KEYED_CALL_SQL; `values` is scratch space) and returns
 * those it inserted: `rows` itself when it inserted all (the usual case: nothing is copied), else
 * the rows whose key was not stored yet. What a batch adds to the rollups is what it inserted.
 */
export function insertKeyedCalls(insert: Database.Statement, rows: CallRecord[], values: unknown[]): CallRecord[] {
  let inserted: CallRecord[] | null = null
  const n = CALL_COLUMNS.length
  for (let i = 0; i < rows.length; i++) {
    const r = rows[i]
    callValues(r, values)
    values[n] = r.call_key ?? null
    if (insert.run(values).changes > 0) inserted?.push(r)
    else inserted ??= rows.slice(0, i)
  }
  return inserted ?? rows
}
