import type { SqlReader } from '../storage/sql'
import { countIf, total } from './sql'
import { from, UNPRICED } from './unpriced-counts'
import type { Window } from './window'

/** The fields a budget rule's scope is matched against (../budgets/scope.ts), and the calls of them. */
export interface ScopeCount {
  api_key_hash: string
  provider: string
  model: string
  requested: string | null
  agent: string
  tenant: string
}

/** A scope's unpriced calls in each window asked for (`n[i]`: in `windows[i]`). */
export type ScopeRow = ScopeCount & { n: number[] }

/** What the budgets count: a call the proxy or an import stored here, not one a team server ingested from a member. */
const OWN = ' AND origin_id IS NULL'
const SCOPE = 'api_key_hash, provider, model, requested_model, agent, tenant'
const SCOPE_AS = 'api_key_hash, provider, model, requested_model AS requested, agent, tenant'

/** The calls of the last hour or so are read afresh at every answer; older ones are kept while the index's range of them is unchanged. */
const FRESH_MS = 3600_000
const CACHED_ANSWERS = 8

/** The unpriced calls of `[start, end)` in each of `windows`, per scope: one pass over that range of the partial index. */
async function scopesIn(q: SqlReader, windows: readonly Window[], start: number, end: number): Promise<ScopeRow[]> {
  const params: Record<string, number> = { start, end }
  const counts = windows.map((w, i) => {
    params[`s${i}`] = w.start
    params[`e${i}`] = w.end
    return `${countIf(`ts >= @s${i} AND ts < @e${i}`)} AS n${i}`
  })
  const rows = await q.all<ScopeCount & Record<string, number>>(
    `SELECT ${SCOPE_AS}, ${counts.join(', ')} ${from(q)}${OWN} GROUP BY ${SCOPE}`,
    params,
  )
  return rows.map((r) => ({
    api_key_hash: r.api_key_hash, provider: r.provider, model: r.model, requested: r.requested, agent: r.agent, tenant: r.tenant,
    n: windows.map((_, i) => Number(r[`n${i}`])),
  }))
}

/**
 * What the index holds of `[start, end)`, read from the index alone: its calls' number, latest
 * stamp and stamps summed (modulo a prime, so exactly). A call priced or superseded leaves the
 * index and one recorded, imported or ingested joins it, so any change of that range changes it.
 */
async function signature(q: SqlReader, start: number, end: number): Promise<string> {
  const r = await q.get<{ n: number; m: number; s: number }>(
    `SELECT count(*) AS n, coalesce(max(ts), 0) AS m, ${total('ts % 999983')} AS s ${from(q)}`,
    { start, end },
  )
  return `${Number(r?.n ?? 0)}:${Number(r?.m ?? 0)}:${Number(r?.s ?? 0)}`
}

const caches = new WeakMap<SqlReader, Map<string, { sig: string; rows: ScopeRow[] }>>()

/**
 * Unpriced calls of this server's own in each of `windows` (fixed bounds: a day, a week, a month),
 * per key and scope; a scope may come in two rows, whose counts add up. The last hour's calls are
 * read every time; the older part of the windows, a month's worth for a ledger of a local
 * model's calls, only when its signature moved (a re-price, a call stamped or imported into it),
 * so an answer asked every 2 seconds (an attached tray's) reads the month once.
 */
export async function unpricedScopes(q: SqlReader, windows: readonly Window[], now: number): Promise<ScopeRow[]> {
  if (windows.length === 0) return []
  const lo = Math.min(...windows.map((w) => w.start))
  const hi = Math.max(...windows.map((w) => w.end))
  const cut = Math.min(hi, Math.max(lo, Math.floor((now - FRESH_MS) / FRESH_MS) * FRESH_MS))
  const older = async (): Promise<ScopeRow[]> => {
    if (!(lo < cut)) return []
    let cache = caches.get(q)
    if (!cache) caches.set(q, (cache = new Map()))
    const key = JSON.stringify([windows, lo, cut])
    const sig = await signature(q, lo, cut)
    let hit = cache.get(key)
    if (hit?.sig !== sig) {
      hit = { sig, rows: await scopesIn(q, windows, lo, cut) }
      if (cache.size >= CACHED_ANSWERS) cache.clear()
      cache.set(key, hit)
    }
    return hit.rows
  }
  const [recent, old] = await Promise.all([cut < hi ? scopesIn(q, windows, cut, hi) : [], older()])
  return [...recent, ...old]
}

/** As unpricedScopes, read whole every time: for windows that move with the clock (a rule's rolling window of hours). */
export async function unpricedScopesNow(q: SqlReader, windows: readonly Window[]): Promise<ScopeRow[]> {
  if (windows.length === 0) return []
  return scopesIn(q, windows, Math.min(...windows.map((w) => w.start)), Math.max(...windows.map((w) => w.end)))
}

/**
 * Unpriced calls of this server's own in the named sessions, whenever they were made (a session's
 * spend under a budget rule is the whole session's), per key, scope and session: read through
 * the sessions' index (calls_session_ts), so only those sessions' calls.
 */
export async function unpricedSessionScopes(q: SqlReader, sessions: readonly string[]): Promise<(ScopeCount & { session: string; n: number })[]> {
  const named = [...new Set(sessions)].filter((s) => s !== '')
  if (named.length === 0) return []
  const params: Record<string, string> = {}
  named.forEach((s, i) => (params[`k${i}`] = s))
  const rows = await q.all<ScopeCount & { session: string; n: number }>(
    `SELECT ${SCOPE_AS}, session, count(*) AS n FROM calls
      WHERE session IN (${named.map((_, i) => `@k${i}`).join(', ')}) AND session <> '' AND ${UNPRICED}${OWN}
      GROUP BY ${SCOPE}, session`,
    params,
  )
  return rows.map((r) => ({ ...r, n: Number(r.n) }))
}

/** A session's unpriced calls of one key and scope in a range, and the latest one's time. */
export type SessionCount = ScopeCount & { session: string; n: number; last: number }

/** This server's own unpriced calls of a session in `[start, end)` (no end: from `start` on), per key, scope and session. */
async function recentSessionsIn(q: SqlReader, start: number, end: number | null): Promise<SessionCount[]> {
  const rows = await q.all<SessionCount>(
    `SELECT ${SCOPE_AS}, session, count(*) AS n, max(ts) AS last ${from(q, end !== null)} AND session <> ''${OWN} GROUP BY ${SCOPE}, session`,
    { start, end },
  )
  return rows.map((r) => ({ ...r, n: Number(r.n), last: Number(r.last) }))
}

const sessionCaches = new WeakMap<SqlReader, Map<string, { sig: string; rows: SessionCount[] }>>()

/**
 * Of this server's own unpriced calls from `since` on (the partial index's range), those of a
 * session, per key, scope and session, with the latest call's time: the sessions a budget rule's
 * meter does not hold (it holds only the sessions that spent money), for its session window. A
 * scope's session may come in up to three rows, whose counts add up. As unpricedScopes, the whole
 * hours from `since` to an hour or so before `now` are read only when their signature moved (a
 * re-price, a call stamped or imported into them); the part of an hour at `since` and the calls
 * since then are read every time. Read whole, 24 hours of a local model's calls were read at every
 * answer (an attached tray's, every 2 seconds).
 */
export async function unpricedRecentSessions(q: SqlReader, since: number, now: number): Promise<SessionCount[]> {
  const a = Math.ceil(since / FRESH_MS) * FRESH_MS
  const cut = Math.floor((now - FRESH_MS) / FRESH_MS) * FRESH_MS
  if (!(a < cut)) return recentSessionsIn(q, since, null)
  const hours = async (): Promise<SessionCount[]> => {
    let cache = sessionCaches.get(q)
    if (!cache) sessionCaches.set(q, (cache = new Map()))
    const key = `${a}:${cut}`
    const sig = await signature(q, a, cut)
    let hit = cache.get(key)
    if (hit?.sig !== sig) {
      hit = { sig, rows: await recentSessionsIn(q, a, cut) }
      if (cache.size >= CACHED_ANSWERS) cache.clear()
      cache.set(key, hit)
    }
    return hit.rows
  }
  const parts = await Promise.all([since < a ? recentSessionsIn(q, since, a) : [], hours(), recentSessionsIn(q, cut, null)])
  return parts.flat()
}
