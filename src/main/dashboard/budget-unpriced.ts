import type { Rule } from '../budgets/rules'
import { scopeMatches } from '../budgets/scope'
import type { SqlReader } from '../storage/sql'
import { unpricedIn } from './unpriced-counts'
import { unpricedRecentSessions, unpricedScopes, unpricedScopesNow, unpricedSessionScopes } from './unpriced-scopes'
import { AFTER_ALL } from './window'

/**
 * A figure of the budgets answer (./budgets.ts) whose unpriced calls are counted: a rule's window
 * for one key (the calls the rule counts in it: that key's, in the rule's scope), a rule's session
 * for one key, or the whole server's day or month (`overall`, every call, as the summary's).
 */
export type UnpricedSpan =
  | { kind: 'rule'; rule: Rule; hash: string; start: number; end: number; window: { unpriced_requests: number } }
  | { kind: 'session'; rule: Rule; hash: string; session: string; window: { unpriced_requests: number } }
  /**
   * A rule's session window for one key whose meter holds no session since `since` (it holds only
   * sessions that spent money): the key's session with the most calls of no known price in the
   * rule's scope since then, if any, is the window's (`session` set), its spend $0.
   */
  | { kind: 'unpriced-session'; rule: Rule; hash: string; since: number; window: { unpriced_requests: number; session?: string | null } }
  | { kind: 'all'; start: number; end: number; window: { unpriced_requests: number } }

/**
 * Sets each span's `unpriced_requests`: how many calls its spend counted as $0 for want of a price
 * (../dashboard/unpriced-counts.ts), so that a rule's spend and forecast holding them read as the
 * lower bounds they are. The meters count money only (an unpriced call adds nothing to them), so
 * the calls are read from the ledger: the windows' from the partial index of unpriced calls (one
 * pass for the distinct calendar periods, a day, a week, a month; one for the rolling windows),
 * the sessions' through the sessions' index, then matched to each rule's key and scope as the
 * meters match a call.
 */
export async function countUnpriced(q: SqlReader, spans: readonly UnpricedSpan[], now: number): Promise<void> {
  // Calendar periods (fixed bounds) and rolling windows (moving with the clock) apart: the older
  // calls of the first are read once while unchanged (./unpriced-scopes.ts), the second every time.
  // The reads are independent: on PostgreSQL they run side by side.
  await Promise.all([
    rulesOf(q, spans, false, now),
    rulesOf(q, spans, true, now),
    sessionsOf(q, spans, now),
    ...spans.map(async (s) => {
      if (s.kind === 'all') s.window.unpriced_requests = await unpricedIn(q, s, null)
    }),
  ])
}

/** The rule windows of `spans` with fixed bounds (`rolling` false) or moving with the clock (true). */
async function rulesOf(q: SqlReader, spans: readonly UnpricedSpan[], rolling: boolean, now: number): Promise<void> {
  const windows: { start: number; end: number }[] = []
  const index = new Map<string, number>()
  const at = (start: number, end: number): number => {
    const k = `${start}:${end}`
    let i = index.get(k)
    if (i === undefined) {
      i = windows.push({ start, end }) - 1
      index.set(k, i)
    }
    return i
  }
  const rules = spans.flatMap((s) => (s.kind === 'rule' && (s.end === AFTER_ALL) === rolling ? [{ s, i: at(s.start, s.end) }] : []))
  if (rules.length === 0) return
  const scopes = rolling ? await unpricedScopesNow(q, windows) : await unpricedScopes(q, windows, now)
  for (const { s, i } of rules) {
    let n = 0
    for (const c of scopes) if (c.api_key_hash === s.hash && c.n[i] > 0 && scopeMatches(s.rule, c)) n += c.n[i]
    s.window.unpriced_requests = n
  }
}

/** The session windows of `spans`: every unpriced call of the session shown, in the rule's scope. */
async function sessionsOf(q: SqlReader, spans: readonly UnpricedSpan[], now: number): Promise<void> {
  const sessions: { rule: Rule; hash: string; session: string; window: { unpriced_requests: number } }[] = spans.flatMap((s) => (s.kind === 'session' ? [s] : []))
  // The windows with no session that spent money: the session of only unpriced calls, if any, is theirs.
  const open = spans.flatMap((s) => (s.kind === 'unpriced-session' ? [s] : []))
  if (open.length) {
    const recent = await unpricedRecentSessions(q, Math.min(...open.map((s) => s.since)), now)
    for (const s of open) {
      // (A session's calls may come in several rows, from the parts of the range read apart.)
      const per = new Map<string, { n: number; last: number }>()
      for (const c of recent) {
        if (c.api_key_hash !== s.hash || c.last < s.since || !scopeMatches(s.rule, c)) continue
        const p = per.get(c.session) ?? { n: 0, last: 0 }
        per.set(c.session, { n: p.n + c.n, last: Math.max(p.last, c.last) })
      }
      // The one with most such calls (the latest of those tied): its whole session counted below.
      const best = [...per].sort(([x, a], [y, b]) => b.n - a.n || b.last - a.last || (x < y ? -1 : 1))[0]?.[0]
      if (best === undefined) continue
      s.window.session = best
      sessions.push({ rule: s.rule, hash: s.hash, session: best, window: s.window })
    }
  }
  const inSessions = await unpricedSessionScopes(q, sessions.map((s) => s.session))
  for (const s of sessions) {
    let n = 0
    for (const c of inSessions) if (c.session === s.session && c.api_key_hash === s.hash && scopeMatches(s.rule, c)) n += c.n
    s.window.unpriced_requests = n
  }
}
