import type { SqlStore } from '../../storage/sql'
import { CALL_COLUMNS, callValues } from '../columns'
import type { CallRecord } from '../record'
import type { StoredCall } from '../types'

/** PostgreSQL types of the columns a recorded call fills, in CALL_COLUMNS order, then `call_key`. */
export const PG_TYPES: Record<(typeof CALL_COLUMNS)[number], string> = {
  ts: 'bigint', provider: 'text', model: 'text', endpoint: 'text', api_key_hash: 'text', key_hint: 'text', tenant: 'text',
  agent: 'text', session: 'text', status: 'integer', streamed: 'integer', input_tokens: 'bigint', output_tokens: 'bigint',
  cache_read_tokens: 'bigint', cache_write_tokens: 'bigint', cache_write_1h_tokens: 'bigint', reasoning_tokens: 'bigint',
  cost_usd: 'double precision', priced: 'integer', estimated: 'integer', latency_ms: 'double precision', error: 'text',
  response_id: 'text', source: 'text', billing: 'text', project: 'text', member: 'text', requested_model: 'text', usage_extra: 'text',
}

/**
 * One statement for any number of rows: each column travels as one array parameter and
 * `unnest` turns them back into rows. The text never changes with the batch size (one prepared
 * plan, no 65,535-parameter limit). A call whose key is already stored (a batch sent again after
 * its COMMIT answer was lost) inserts nothing; RETURNING names the rows that were inserted.
 */
export const PG_INSERT_CALLS_SQL = `INSERT INTO calls (${CALL_COLUMNS.join(', ')}, call_key)
  SELECT * FROM unnest(${CALL_COLUMNS.map((c) => `@${c}::${PG_TYPES[c]}[]`).join(', ')}, @call_key::text[])
  ON CONFLICT (call_key) DO NOTHING
  RETURNING id, call_key`

/** The batch's values as one array per column. Every row must carry a `call_key`. */
export function columnArrays(rows: readonly CallRecord[]): Record<string, unknown[]> {
  const out: Record<string, unknown[]> = {}
  for (const c of CALL_COLUMNS) out[c] = new Array(rows.length)
  const keys = new Array<string>(rows.length)
  const values: unknown[] = []
  for (let i = 0; i < rows.length; i++) {
    callValues(rows[i], values)
    for (let j = 0; j < CALL_COLUMNS.length; j++) out[CALL_COLUMNS[j]][i] = values[j]
    keys[i] = rows[i].call_key as string
  }
  out.call_key = keys
  return out
}

/**
 * Inserts `rows` (one statement) inside `tx` and returns the ones it inserted, each with its
 * id, in the batch's order; rows whose key was already stored are left out.
 */
export async function insertCalls(tx: SqlStore, rows: readonly CallRecord[]): Promise<StoredCall[]> {
  const returned = await tx.all<{ id: number; call_key: string }>(PG_INSERT_CALLS_SQL, columnArrays(rows))
  if (returned.length === 0) return []
  const ids = new Map<string, number>()
  for (const r of returned) ids.set(r.call_key, r.id)
  const out: StoredCall[] = []
  for (const r of rows) {
    const id = ids.get(r.call_key as string)
    if (id !== undefined) out.push({ ...r, id })
  }
  return out
}

/**
 * Errors that say a row, not the database, is the problem: PostgreSQL's data exceptions (class
 * 22: a value the column cannot take) and integrity violations (23), or an error with no code at
 * all (a batch hook that threw on a row). Everything else (refused connection, server shut down,
 * timeouts, too many connections) means the database is away: the rows are kept and retried.
 */
export function isRowProblem(err: unknown): boolean {
  const e = err as { code?: unknown; message?: unknown } | null
  if (!e || typeof e !== 'object') return false
  if (typeof e.code === 'string') return /^(22|23)[0-9A-Z]{3}$/.test(e.code)
  const msg = String(e.message ?? '')
  return !/connect|terminat|timeout|timed out|closed|ended|shutting|reset|ECONN|EPIPE|socket/i.test(msg)
}

/** A row again with its text free of NUL bytes (PostgreSQL text cannot hold them) and its counts whole. */
export function pgSafe(row: CallRecord): CallRecord {
  const out: any = { ...row }
  for (const [k, v] of Object.entries(out)) {
    if (typeof v === 'string' && v.includes('\u0000')) out[k] = v.split('\u0000').join('')
  }
  for (const k of ['ts', 'input_tokens', 'output_tokens', 'cache_read_tokens', 'cache_write_tokens', 'cache_write_1h_tokens', 'reasoning_tokens', 'status'] as const) {
    if (typeof out[k] === 'number' && Number.isFinite(out[k])) out[k] = Math.round(out[k])
  }
  return out as CallRecord
}
