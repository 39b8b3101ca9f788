import type { CallRecord } from './record'

/**
 * `call` with no NUL byte in its text, as both stores record it. PostgreSQL text cannot hold one
 * (its insert fails and the row goes again without them: ./pg/insert.ts pgSafe), while SQLite kept
 * them: a proxied request naming its model `gpt-4o\u0000-mini` (JSON lets a body say so) was that
 * name on SQLite and `gpt-4o-mini` on PostgreSQL. Ingest drops them the same way
 * (../team/validate.ts). The same object when it holds none (nearly always). On every call's
 * record: it walks the fields in place (Object.entries made an array per field, ~1 KB a call).
 */
export function withoutNul(call: CallRecord): CallRecord {
  let out: Record<string, unknown> | null = null
  for (const k in call) {
    const v = (call as unknown as Record<string, unknown>)[k]
    if (typeof v !== 'string' || !v.includes('\u0000')) continue
    out ??= { ...call }
    out[k] = v.split('\u0000').join('')
  }
  return (out as CallRecord | null) ?? call
}
