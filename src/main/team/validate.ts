import type { IngestCall, IngestRejection } from '../../shared/api'
import type { CallRecord } from '../ledger/record'
import { MAX_LABEL, limitText } from '../proxy/attribution'

/** A call of an ingest batch, ready to store: the record and the sender's id of it. */
export interface IngestRow {
  /** Its place in the batch. */
  index: number
  origin_id: number
  /** The sender's revision of the call (0: none, as first recorded). */
  revision: number
  record: CallRecord
  /** An imported call the proxy's record superseded on the sender: the sender's id of that record (./store.ts). */
  superseded_by: number | null
}

/**
 * Longest text accepted in a call's checked string fields (`api_key_hash`, `key_hint`, `member`),
 * and kept of its `endpoint` and `error` (cut to it).
 */
export const MAX_TEXT = 1000

/** A call's names, stored cut to their first MAX_LABEL (200) characters, as the proxy records names. */
export const LABEL_FIELDS = ['provider', 'model', 'tenant', 'agent', 'session', 'response_id', 'project'] as const
/** A call's texts stored cut to their first MAX_TEXT characters. */
export const LONG_TEXT_FIELDS = ['endpoint', 'error'] as const

const HEX64 = /^[0-9a-f]{64}$/
/** The ledger's key hints: `…` alone, or 3 characters, `…`, 4 characters (contract: Attribution). */
const HINT = /^(…|[^\s…]{3}…[^\s…]{4})$/u
const ISO_Z = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?Z$/

class Bad extends Error {
  constructor(
    readonly param: string,
    message: string,
  ) {
    super(message)
  }
}

/**
 * `v` without its NUL bytes. PostgreSQL text cannot hold one, and its ledger drops them
 * (../ledger/pg/insert.ts pgSafe) while SQLite kept them: `acme\u0000` was the tenant `acme` on a
 * PostgreSQL team server and another tenant on SQLite, which no budget rule or dashboard filter
 * (a NUL in a parameter is a 400) could name. Both stores now hold the name PostgreSQL holds.
 */
function withoutNul(v: string): string {
  return v.includes('\u0000') ? v.split('\u0000').join('') : v
}

/** A text as a team server stores it: without NUL bytes, then cut to its first `max` characters (never half a UTF-16 pair). */
export function storedText(v: string, max: number): string {
  return limitText(withoutNul(v), max)
}

/**
 * A member's call with its text as the team server stores it (names cut to MAX_LABEL characters,
 * `endpoint` and `error` to MAX_TEXT, NUL bytes dropped): what the sender sends, so that a team
 * server that refuses longer text (builds before this one) takes the call, and a batch carries no
 * text the team server would drop. Cutting it again gives the same text, so a call sent cut and
 * one sent whole are the same call to the team server (a resend, a revision).
 */
export function asStored(c: IngestCall): IngestCall {
  let out: IngestCall | null = null
  const put = (name: (typeof LABEL_FIELDS)[number] | (typeof LONG_TEXT_FIELDS)[number], max: number) => {
    const v = c[name]
    if (typeof v !== 'string') return
    const kept = storedText(v, max)
    if (kept !== v) (out ??= { ...c })[name] = kept
  }
  for (const f of LABEL_FIELDS) put(f, MAX_LABEL)
  for (const f of LONG_TEXT_FIELDS) put(f, MAX_TEXT)
  return out ?? c
}

function string(c: Record<string, unknown>, name: string, fallback?: string): string {
  const v = c[name]
  if (v === undefined && fallback !== undefined) return fallback
  if (typeof v !== 'string') throw new Bad(name, `${name} must be a string.`)
  return v
}

function text(c: Record<string, unknown>, name: string, fallback?: string): string {
  const v = string(c, name, fallback)
  if (v.length > MAX_TEXT) throw new Bad(name, `${name} is longer than ${MAX_TEXT} characters.`)
  return withoutNul(v)
}

/**
 * A name as the proxy records it: cut to its first MAX_LABEL (200) characters, however long it
 * came. A name of 1,000 CJK characters is 3,000 bytes, more than a PostgreSQL index entry holds
 * (the calls' and the rollups' indexes hold these names), so the batch's insert failed, answered
 * 503, and the member sent the same batch again for good. A name over 1,000 characters was
 * refused, and the member skipped the call: its money never reached the team (a member's ledger
 * keeps an answer id as the provider sent it, and an imported call's folder and session as the
 * agent logged them, whatever their length).
 */
function label(c: Record<string, unknown>, name: string, fallback?: string): string {
  return storedText(string(c, name, fallback), MAX_LABEL)
}

/**
 * The most one call may carry. Far above any real call (a million-token context costs dollars,
 * not millions), and far enough below what sums overflow at that one member's absurd figures
 * cannot turn the team's totals into Infinity (a REAL) or an integer overflow (SQLite's sum()
 * fails) for every member.
 */
export const MAX_CALL_TOKENS = 1e9
export const MAX_CALL_COST_USD = 1e6
export const MAX_CALL_LATENCY_MS = 1e9
/**
 * The highest revision a member may send: a re-price every millisecond for 30 years, far below
 * 2^53. A team server numbers its own revisions one above the highest in its ledger, members'
 * included (../ledger/revisions.ts), so a member's revision near 2^53 would push them past exact
 * integers, where the next one is no longer above the last.
 */
export const MAX_REVISION = 1e12

function count(c: Record<string, unknown>, name: string): number {
  const v = c[name]
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0 || v > MAX_CALL_TOKENS) {
    throw new Bad(name, `${name} must be a whole number from 0 to ${MAX_CALL_TOKENS}.`)
  }
  return v
}

function amount(c: Record<string, unknown>, name: string, max: number): number {
  const v = c[name]
  if (typeof v !== 'number' || !Number.isFinite(v) || v < 0 || v > max) throw new Bad(name, `${name} must be a number from 0 to ${max}.`)
  return v
}

function flag(c: Record<string, unknown>, name: string): boolean {
  const v = c[name]
  if (typeof v !== 'boolean') throw new Bad(name, `${name} must be true or false.`)
  return v
}

function oneOf<T extends string>(c: Record<string, unknown>, name: string, accepted: readonly T[], fallback: T): T {
  const v = c[name]
  if (v === undefined) return fallback
  if (!(accepted as readonly unknown[]).includes(v)) throw new Bad(name, `${name} must be one of ${accepted.join(', ')}.`)
  return v as T
}

/**
 * Reads one call of an ingest batch for `member`: the contract's call fields, checked as the
 * dashboard would show them; money kept exactly as sent. The API key can only arrive as the
 * ledger holds it (a SHA-256 hash and a short hint): anything else in those fields is refused,
 * so a raw key sent by mistake is never stored. Unknown fields are ignored (a newer Burnrate may send more).
 */
export function readIngestCall(raw: unknown, member: string, index = 0): IngestRow {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) throw new Bad('', 'Each call must be a JSON object.')
  const c = raw as Record<string, unknown>
  const id = c.id
  if (typeof id !== 'number' || !Number.isSafeInteger(id) || id < 1) {
    throw new Bad('id', 'id must be the sending Burnrate\'s call id, a whole number >= 1.')
  }
  const t = c.t
  const ts = typeof t === 'string' && ISO_Z.test(t) ? Date.parse(t) : NaN
  // A day or time that does not exist (2026-02-30, 24:30) is refused, not rolled over (V8 reads
  // 2026-02-30 as March 2): what it parses to must read back as sent.
  if (!Number.isFinite(ts) || new Date(ts).toISOString().slice(0, 19) !== (t as string).slice(0, 19)) {
    throw new Bad('t', 't must be an ISO-8601 UTC time ending in Z (2026-11-21T18:04:05.123Z), of a day and time that exist.')
  }
  const keyHash = text(c, 'api_key_hash')
  if (keyHash !== '' && !HEX64.test(keyHash)) {
    throw new Bad('api_key_hash', 'api_key_hash must be the lowercase hex SHA-256 of the key (or empty); never the key itself.')
  }
  const hint = text(c, 'key_hint', keyHash === '' ? '' : '…')
  if (hint !== '' && !HINT.test(hint)) {
    throw new Bad('key_hint', 'key_hint must be the ledger\'s hint of the key (3 characters, …, 4 characters) or empty.')
  }
  const sentMember = text(c, 'member', '')
  if (sentMember !== '' && sentMember !== member) {
    throw new Bad('member', `member must be empty or ${JSON.stringify(member)} (the member of this token).`)
  }
  const status = c.status
  if (typeof status !== 'number' || !Number.isInteger(status) || status < 0 || status > 999) {
    throw new Bad('status', 'status must be an HTTP status, a whole number from 0 to 999.')
  }
  const revision = c.revision ?? 0
  if (revision !== 0 && (typeof revision !== 'number' || !Number.isSafeInteger(revision) || revision < 1 || revision > MAX_REVISION)) {
    throw new Bad('revision', `revision must be a whole number from 1 to ${MAX_REVISION} (or absent for a call as first recorded).`)
  }
  const supersededBy = c.superseded_by ?? null
  if (supersededBy !== null && (typeof supersededBy !== 'number' || !Number.isSafeInteger(supersededBy) || supersededBy < 1)) {
    throw new Bad('superseded_by', 'superseded_by must be the sending Burnrate\'s id of the proxied call that superseded this imported one, a whole number >= 1 (or absent).')
  }
  const error = c.error
  if (error !== undefined && error !== null && typeof error !== 'string') throw new Bad('error', 'error must be a string or null.')
  const record: CallRecord = {
    ts,
    provider: label(c, 'provider'),
    model: label(c, 'model'),
    endpoint: storedText(string(c, 'endpoint', ''), MAX_TEXT),
    api_key_hash: keyHash,
    key_hint: hint,
    tenant: label(c, 'tenant'),
    agent: label(c, 'agent'),
    session: label(c, 'session'),
    status,
    streamed: flag(c, 'streamed'),
    input_tokens: count(c, 'input_tokens'),
    output_tokens: count(c, 'output_tokens'),
    cache_read_tokens: count(c, 'cache_read_tokens'),
    cache_write_tokens: count(c, 'cache_write_tokens'),
    cache_write_1h_tokens: 0,
    reasoning_tokens: count(c, 'reasoning_tokens'),
    cost_usd: amount(c, 'cost_usd', MAX_CALL_COST_USD),
    priced: flag(c, 'priced'),
    estimated: flag(c, 'estimated'),
    latency_ms: amount(c, 'latency_ms', MAX_CALL_LATENCY_MS),
    error: typeof error === 'string' ? storedText(error, MAX_TEXT) : null,
    response_id: label(c, 'response_id', ''),
    source: oneOf(c, 'source', ['proxy', 'import'] as const, 'proxy'),
    billing: oneOf(c, 'billing', ['api', 'subscription'] as const, 'api'),
    project: label(c, 'project', ''),
    member,
    // Not part of the ingest contract; ingested calls count in no budget (README: Team).
    requested_model: null,
    // Not part of the ingest contract either: an ingested call is never re-priced (README: Team).
    usage_extra: null,
  }
  if (record.provider === '') throw new Bad('provider', 'provider must not be empty.')
  // input_tokens counts every prompt token, the cached ones included (the contract's call).
  if (record.cache_read_tokens + record.cache_write_tokens > record.input_tokens) {
    throw new Bad('cache_read_tokens', 'cache_read_tokens and cache_write_tokens are parts of input_tokens (every prompt token, cached ones included); their sum cannot exceed it.')
  }
  // Superseded: the proxied call it names is the answer's record, so it counts nothing (README:
  // Team). A member sends it at $0 and 0 tokens; what a hand-made sender put there is not kept.
  if (supersededBy !== null) {
    record.cost_usd = 0
    record.input_tokens = record.output_tokens = record.cache_read_tokens = record.cache_write_tokens = record.reasoning_tokens = 0
  }
  return { index, origin_id: id, revision: revision as number, record, superseded_by: supersededBy as number | null }
}

/** Reads every call of a batch: the good ones to store, the bad ones as rejections (param `calls[i].field`). */
export function readIngestBatch(calls: readonly unknown[], member: string): { rows: IngestRow[]; rejected: IngestRejection[] } {
  const rows: IngestRow[] = []
  const rejected: IngestRejection[] = []
  const seen = new Map<number, IngestRow>()
  calls.forEach((raw, index) => {
    try {
      const row = readIngestCall(raw, member, index)
      const first = seen.get(row.origin_id)
      if (first === undefined) {
        rows.push(row)
        seen.set(row.origin_id, row)
        return
      }
      // The same id twice in one batch is one call sent twice: the later copy is a duplicate. A
      // different call under it (another time, provider or model) is refused, as one under an id
      // sent in an earlier batch is (./store.ts), not dropped unsaid as a duplicate.
      const a = first.record
      const b = row.record
      if (a.ts !== b.ts || a.provider !== b.provider || a.model !== b.model) {
        throw new Bad('id', `calls[${first.index}] is a different call with the same id ${row.origin_id}; each call needs an id of its own.`)
      }
    } catch (err) {
      if (!(err instanceof Bad)) throw err
      const id = raw !== null && typeof raw === 'object' ? (raw as { id?: unknown }).id ?? null : null
      rejected.push(rejection(index, id, err.param, err.message))
    }
  })
  return { rows, rejected }
}

/** A refused call of a batch, in the contract's error shape (param `calls[i].field`). */
export function rejection(index: number, id: unknown, field: string, message: string): IngestRejection {
  const param = `calls[${index}]${field ? '.' + field : ''}`
  return { index, id, error: { type: 'invalid_request', message: `${param}: ${message}`, param } }
}
