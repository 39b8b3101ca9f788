import { randomUUID } from 'node:crypto'
import type { CallRecord } from '../../ledger/record'
import { isBatchResult } from '../../providers/batch-results'
import { FREE_ENDPOINTS } from '../../providers/free-endpoints'
import type { SqlStore } from '../../storage/sql'
import { LOOP_REASON, RATE_REASON, REFUSAL_REASON } from '../gate'
import type { CostAdjustment } from '../types'
import { admissionTold } from './admission-told'

/**
 * PG mode: every instance's in-process meters (warnings, per-minute limits, alerts, the budget
 * listings) follow the calls the other instances store, within moments, not at the next restart.
 *
 * Whatever stores calls (a ledger batch, an import) sends, in the same transaction, a NOTIFY on
 * CALLS_CHANNEL with those calls summed as the meters count them (as HISTORY_SQL sums them at a
 * reload). PostgreSQL delivers a notification only when its transaction commits, in commit order,
 * never for one rolled back, so a listener counts each stored call once. Each notification carries
 * its transaction's id: a call already in the rows a reload read (its transaction visible in the
 * reload's snapshot) is not counted again. A listener that lost its connection reloads once it is
 * back (what was sent meanwhile is in the rows it reads).
 */
export const CALLS_CHANNEL = 'burnrate_calls'

/** A notification's payload is at most 8000 bytes; its transaction id and a space come first. */
const MAX_PAYLOAD_BYTES = 7_900
/** More chunks than this for one transaction: a reload is asked for instead (a huge import). */
const MAX_CHUNKS = 64

/**
 * What the meters count of stored calls, per key, scope, session and minute of arrival:
 * [api_key_hash, key_hint, provider, model, requested_model, agent, tenant, session, minute, cost,
 * tokens, last ts, calls, requests sent upstream, the prefix patterns the sender knows the key to match].
 * The last: a key's raw value is never stored, so an instance that has not seen it could not tell
 * whether a `sk-team-*` rule applies to it (its listing would leave the key out).
 */
export type FeedRow = [string, string, string, string, string | null, string, string, string, number, number, number, number, number, number, string[]]

/**
 * A stored call's cost moved (re-priced, a background response settled, an imported call
 * superseded), as the meters move it: [api_key_hash, ts, provider, model, requested_model, agent,
 * tenant, session, delta], then whether it is a background response's real usage taken (1, or
 * since it is sent, the response's id; 0: not), then what its key's request count moves by (-1: an
 * imported call superseded, no longer a request; absent: none), then with it the key's newest call
 * still a request ([ts, tenant]; 0: none left; absent: not known, its last-seen time and tenant stay).
 */
export type MoveRow = [string, number, string, string, string | null, string, string, string, number, (0 | 1 | string)?, number?, ([number, string] | 0)?]

/**
 * Calls admitted under a rule with a per-minute request limit, as they are admitted
 * (./admissions.ts): [api_key_hash, provider, model requested, agent, tenant, calls, the prefix
 * patterns the sender knows the key to match].
 */
export type AdmissionRow = [string, string, string, string, string, number, string[]]

/** The rule patterns this process knows each key (by hash) to match, when its budgets run. */
const knownOf = new WeakMap<SqlStore, (hash: string) => readonly string[]>()
export function shareKnownPatterns(store: SqlStore, known: (hash: string) => readonly string[]): void {
  knownOf.set(store, known)
}

/** One id per store: notifications a process sent itself are not counted twice (its calls reach its meters directly). */
const ids = new WeakMap<SqlStore, string>()
export function feedIdOf(store: SqlStore): string {
  let id = ids.get(store)
  if (!id) {
    id = randomUUID()
    ids.set(store, id)
  }
  return id
}

/** Refusals by Burnrate itself never went upstream, reads and cancels of what is already paid for are never counted (README: Budgets), and calls imported from agents' logs never came through a proxy: not requests a per-minute limit counts. */
const REFUSALS = new Set([REFUSAL_REASON, RATE_REASON, LOOP_REASON])
const FREE = new Set(FREE_ENDPOINTS)

/** The stored calls as the meters count them (money only). Calls a team server ingests are stored by its own path (team/store.ts), never fed: they are in no meter. */
export function feedRowsOf(calls: readonly CallRecord[], known?: (hash: string) => readonly string[]): FeedRow[] {
  const byGroup = new Map<string, FeedRow>()
  for (const c of calls) {
    const minute = Math.floor(c.ts / 60_000) * 60_000
    const requested = c.requested_model ?? null
    const group = JSON.stringify([c.api_key_hash, c.provider, c.model, requested, c.agent, c.tenant, c.session, minute])
    let r = byGroup.get(group)
    if (!r) {
      r = [c.api_key_hash, c.key_hint, c.provider, c.model, requested, c.agent, c.tenant, c.session, minute, 0, 0, 0, 0, 0, known ? [...known(c.api_key_hash)] : []]
      byGroup.set(group, r)
    }
    if (c.key_hint > r[1]) r[1] = c.key_hint
    r[9] += c.billing === 'subscription' ? 0 : c.cost_usd
    // A batch's requests stored from its results file: money, never this minute's tokens or requests (README: Budgets).
    const batch = isBatchResult(c.endpoint)
    if (!batch) r[10] += c.input_tokens + c.output_tokens
    r[11] = Math.max(r[11], c.ts)
    r[12]++
    // A call whose admission was told as it happened (./admissions.ts) is in the others' per-minute counts already.
    if (!(c.error && REFUSALS.has(c.error)) && !FREE.has(c.endpoint) && !admissionTold(c) && c.source !== 'import' && !batch) r[13]++
  }
  return [...byGroup.values()]
}

/** Every payload of a transaction in one statement (one round trip, however many). */
const NOTIFY_SQL = `SELECT pg_notify('${CALLS_CHANNEL}', pg_current_xact_id()::text || ' ' || p) FROM unnest(@payloads::text[]) AS p`

/** NOTIFY_SQL answering with the transaction's id (one row per payload, each with it). */
const NOTIFY_XID_SQL = `SELECT pg_current_xact_id()::text AS xid, pg_notify('${CALLS_CHANNEL}', pg_current_xact_id()::text || ' ' || p) FROM unnest(@payloads::text[]) AS p`

/** Notifications of no transaction (admissions, a listener's check of itself): `0` where a transaction's id goes. */
const NOTIFY_NOW_SQL = `SELECT pg_notify('${CALLS_CHANNEL}', '0 ' || p) FROM unnest(@payloads::text[]) AS p`

/** Sends `payloads` on CALLS_CHANNEL at once, outside any transaction (one statement). */
export function notifyNow(store: SqlStore, payloads: readonly string[]): Promise<number> {
  return store.run(NOTIFY_NOW_SQL, { payloads })
}

/** Sends the stored calls' feed rows from inside the transaction that stored them (PostgreSQL only); `store`: the one the process's budgets run on. */
export async function publishCalls(tx: SqlStore, store: SqlStore, calls: readonly CallRecord[]): Promise<void> {
  if (tx.dialect !== 'postgres' || calls.length === 0) return
  const feedId = feedIdOf(store)
  const rows = feedRowsOf(calls, knownOf.get(store))
  if (rows.length === 0) return
  const payloads = notifyPayloads(feedId, rows)
  // A row too long for a notification (a model or session name of kilobytes), or a huge import:
  // the listeners read the calls again instead. A notification that fails would roll the calls back.
  if (!payloads) return publishReload(tx, feedId)
  await tx.run(NOTIFY_SQL, { payloads })
}

/**
 * The feed rows as notification payloads, each under PostgreSQL's limit with the transaction id
 * in front (numbered: PostgreSQL folds identical notifications of one transaction into one);
 * null when they do not fit in MAX_CHUNKS.
 */
export function notifyPayloads(feedId: string, rows: readonly (FeedRow | MoveRow | AdmissionRow)[], field: 'r' | 'm' | 'a' = 'r'): string[] | null {
  const out: string[] = []
  let part: string[] = []
  let bytes = 0
  const close = () => out.push(`{"i":"${feedId}","n":${out.length},"${field}":[${part.join(',')}]}`)
  for (const r of rows) {
    const text = JSON.stringify(r)
    const size = Buffer.byteLength(text) + 1
    if (part.length > 0 && bytes + size > MAX_PAYLOAD_BYTES - 120) {
      close()
      part = []
      bytes = 0
    }
    part.push(text)
    bytes += size
  }
  close()
  if (out.length > MAX_CHUNKS || out.some((c) => Buffer.byteLength(c) > MAX_PAYLOAD_BYTES - 30)) return null
  return out
}

/**
 * Sends the cost moves of stored calls (re-pricing, a settled background response) from inside the
 * transaction that made them (PostgreSQL only): the other instances move their meters and today's
 * spend by them, as this one does; too many for notifications, they read their meters again.
 * Resolves to the transaction's id (null: nothing sent), which tells this instance whether a read
 * of its meters under way holds the moves (../shared.ts).
 */
export async function publishMoves(tx: SqlStore, feedId: string, moves: readonly CostAdjustment[]): Promise<number | null> {
  if (tx.dialect !== 'postgres' || moves.length === 0) return null
  const rows: MoveRow[] = moves.map((c) => {
    const row: MoveRow = [c.api_key_hash, c.ts, c.provider, c.model, c.requested_model ?? null, c.agent, c.tenant, c.session, c.delta]
    // A background response's real usage taken: the instance holding its reservation lets it go.
    if (c.usage_in) row.push(c.response_id ?? 1)
    // No longer a request of its key (the admin API's requests_month): the others count it so too.
    if (c.requests) {
      if (!c.usage_in) row.push(0)
      row.push(c.requests)
      // Its key's last-seen time and tenant become its newest call's left, there as here (older listeners ignore it).
      if (c.latest !== undefined) row.push(c.latest === null ? 0 : [c.latest.ts, c.latest.tenant])
    }
    return row
  })
  // Too many for notifications: the others read their meters again.
  const payloads = notifyPayloads(feedId, rows, 'm') ?? [reloadPayload(feedId)]
  const sent = await tx.get<{ xid: string }>(NOTIFY_XID_SQL, { payloads })
  return sent ? Number(sent.xid) : null
}

const reloadPayload = (feedId: string): string => `{"i":"${feedId}","reload":true}`

/** Tells the other instances to read their meters again (what changed is too much to send). */
export async function publishReload(tx: SqlStore, feedId: string): Promise<void> {
  if (tx.dialect !== 'postgres') return
  await tx.run(NOTIFY_SQL, { payloads: [reloadPayload(feedId)] })
}
