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
