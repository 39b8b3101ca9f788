import type { CallRecord } from '../ledger/record'

/**
 * Write errors that say the database, not the row, is the problem (locked, full, read-only,
 * I/O): the rows are kept and retried. Anything else (a constraint, a value SQLite cannot bind,
 * a rollup hook that throws on a row) is about a row, and must not block every row after it.
 */
export function isDatabaseProblem(err: unknown): boolean {
  const code = (err as { code?: unknown })?.code
  if (typeof code !== 'string') return false
  return /^SQLITE_(BUSY|LOCKED|FULL|READONLY|IOERR|CANTOPEN|NOMEM|PROTOCOL|CORRUPT|NOTADB|INTERRUPT|AUTH|PERM|ABORT)/.test(code)
}

const TEXT: (keyof CallRecord)[] = ['provider', 'model', 'endpoint', 'api_key_hash', 'key_hint', 'tenant', 'agent', 'session']
const COUNTS: (keyof CallRecord)[] = [
  'ts', 'status', 'input_tokens', 'output_tokens', 'cache_read_tokens', 'cache_write_tokens', 'cache_write_1h_tokens',
  'reasoning_tokens', 'cost_usd', 'latency_ms',
]

/**
 * The same call with every field in the shape the `calls` table takes: text as strings
 * (at most 4 KiB), numbers finite, flags boolean. Used only for a row the database refused.
 */
export function sanitizeRecord(row: CallRecord): CallRecord {
  const out: any = { ...row }
  for (const k of TEXT) {
    const v = out[k]
    out[k] = (typeof v === 'string' ? v : v == null ? '' : String(v)).slice(0, 4096)
  }
  for (const k of COUNTS) {
    const v = Number(out[k])
    out[k] = Number.isFinite(v) ? v : 0
  }
  for (const k of ['streamed', 'priced', 'estimated'] as const) out[k] = Boolean(out[k])
  out.error = out.error == null ? null : String(out.error).slice(0, 4096)
  return out as CallRecord
}
