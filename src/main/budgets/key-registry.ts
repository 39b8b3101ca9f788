import { createHash } from 'node:crypto'
import type { CallRecord } from '../ledger/record'
import type { PeriodClock } from '../time/zone'
import type { KeyState } from './key-state'
import { isPrefix, prefixOf } from './pattern'
import type { Rule, RuleIndex } from './rules'
import type { KeyLatest } from './types'
import { scoped } from './scope'
import { addLater, takeLater } from '../time/later'

/** A key's calls this month as the database holds them (the registry's seed). */
export interface KeyCount {
  api_key_hash: string
  key_hint: string
  tenant: string
  requests: number
  last_ts: number
}

const NO_PATTERNS: readonly string[] = []

/**
 * The API keys the budget engine has seen, by hash (the raw key is never kept): each key's
 * requests this month, its tenant and last call (the API keys listing), and which rules' key
 * patterns it matches. A rule's pattern is matched against the raw key when a call brings it;
 * a key known only by hash (after a restart, or seen by another instance) is matched by the
 * prefix patterns it was seen to match, or by hash for an exact pattern. Those patterns outlive a
 * restart: each one a key is seen to match for the first time goes to `onLearnt` (kept in the
 * data folder's file, ./key-patterns.ts) and comes back through `remember`.
 */
export class KeyRegistry {
  private readonly byHash = new Map<string, KeyState>()
  private readonly exactHashes = new WeakMap<Rule, string>()
  /** Patterns kept from before this start, for keys not in `byHash` yet. */
  private readonly remembered = new Map<string, string[]>()
  /** Told each pattern a key is seen to match for the first time (to keep it across a restart). */
  onLearnt: ((hash: string, patterns: readonly string[]) => void) | null = null

  constructor(private readonly clock: PeriodClock) {}

  get(hash: string): KeyState | undefined {
    return this.byHash.get(hash)
  }

  /** The key's state, created empty the first time its hash is seen. */
  state(hash: string, hint: string): KeyState {
    let s = this.byHash.get(hash)
    if (!s) {
      s = { hash, hint, tenant: '', monthStart: 0, monthEnd: 0, requestsMonth: 0, laterMonths: null, lastSeen: null, gen: 0, candidates: [], known: new Set(this.remembered.get(hash)) }
      this.remembered.delete(hash)
      this.byHash.set(hash, s)
    }
    return s
  }

  /** Patterns keys were seen to match before this start (kept by `onLearnt`): known again, not told again. */
  remember(rows: Iterable<{ api_key_hash: string; pattern: string }>): void {
    for (const r of rows) {
      const s = this.byHash.get(r.api_key_hash)
      if (s) s.known.add(r.pattern)
      else {
        const list = this.remembered.get(r.api_key_hash)
        if (list) list.push(r.pattern)
        else this.remembered.set(r.api_key_hash, [r.pattern])
      }
    }
  }

  /** Patterns the key is seen to match (with its raw key here, or by another instance that had it); new ones go to `onLearnt`. */
  learn(s: KeyState, patterns: unknown): void {
    if (!Array.isArray(patterns)) return
    let fresh: string[] | null = null
    for (const p of patterns) {
      if (typeof p !== 'string' || s.known.has(p)) continue
      s.known.add(p)
      ;(fresh ??= []).push(p)
    }
    if (fresh && this.onLearnt) {
      try {
        this.onLearnt(s.hash, fresh)
      } catch {
        // keeping them is best effort: they are learnt again from the key's next call
      }
    }
  }

  /** The rules for a call's key, resolved with its raw key and remembered under the key's hash. */
  resolve(index: RuleIndex, s: KeyState, key: string): Rule[] {
    if (s.gen !== index.generation) {
      s.candidates = index.candidates(key)
      this.learn(s, index.matchingPrefixes(key))
      s.gen = index.generation
    }
    return s.candidates
  }

  /** Whether a key known by hash is under `rule`'s key pattern: `maybe` counts keys not yet seen with their raw key. */
  matches(index: RuleIndex, rule: Rule, s: KeyState, maybe: boolean): boolean {
    const pattern = rule.api_key_pattern
    if (!isPrefix(pattern)) return this.exactHash(rule) === s.hash
    if (pattern === '*' || s.known.has(pattern)) return true
    if (s.gen === index.generation) return false
    const p = prefixOf(pattern)
    if (p.length <= 3 && s.hint.length > 1 && s.hint.startsWith(p)) return true
    return maybe
  }

  /** The effective rule of a key known by hash (listings): its first rule with no scope, else its first. */
  ruleFor(index: RuleIndex, hash: string): Rule | null {
    const s = this.byHash.get(hash)
    if (s && s.gen === index.generation) return s.candidates.find((r) => !scoped(r)) ?? s.candidates[0] ?? null
    return index.effectiveByHash(hash, s?.hint ?? '', s?.known ?? new Set())
  }

  /** The prefix patterns a key is known to match (a copy: it is sent to other instances). */
  patterns(s: KeyState | undefined): readonly string[] {
    return s && s.known.size > 0 ? [...s.known] : NO_PATTERNS
  }

  /** Counts `requests` calls of the key at `ts` in its month, and keeps the tenant of its latest. */
  count(s: KeyState, ts: number, tenant: string, requests: number, now: number): void {
    this.inMonth(s, ts, requests, now)
    if (s.lastSeen === null || ts >= s.lastSeen) {
      s.lastSeen = ts
      s.tenant = tenant
    }
  }

  /**
   * `requests` (negative) calls of the key at `ts` are no longer requests (an imported call
   * superseded): taken off its month's count. Its last-seen time and tenant become those of its
   * newest call still a request (`latest`, none: not seen) when the call taken off was its newest,
   * as a restart reads them (KEYS_SQL leaves superseded calls out); otherwise, or when `latest` is
   * not known, they stay.
   */
  uncount(s: KeyState, ts: number, requests: number, latest: KeyLatest | null | undefined, now: number): void {
    this.inMonth(s, ts, requests, now)
    if (latest === undefined || s.lastSeen === null || ts < s.lastSeen) return
    s.lastSeen = latest?.ts ?? null
    if (latest) s.tenant = latest.tenant
  }

  /**
   * Moves the key's count by `requests` for a call at `ts`: in `now`'s month when it falls in it,
   * in its own later month when stamped after it (ahead of the clock), kept for when the count
   * rolls into it; a call of an earlier month is not counted.
   */
  private inMonth(s: KeyState, ts: number, requests: number, now: number): void {
    // Never back to an ended month (a time read before an await, a clock stepped back): its count would be lost.
    const month = this.clock.monthOf(now)
    if (month.start > s.monthStart) {
      s.monthStart = month.start
      s.monthEnd = month.end
      s.requestsMonth = takeLater(s.laterMonths, month.start)
      if (s.laterMonths?.size === 0) s.laterMonths = null
    }
    if (ts >= s.monthEnd) {
      addLater((s.laterMonths ??= new Map()), this.clock.monthOf(ts).start, requests)
    } else if (ts >= s.monthStart) s.requestsMonth += requests
  }

  /**
   * The moment a re-read of this month's keys at `now` is for (`reseed`'s `readAt`): `now`, or the
   * start of the latest month a key's count has already rolled into (see inMonth). Read for `now`'s
   * month while the wall clock was stepped back across its end, the re-read counted the new month's
   * calls in the ended one, and once the clock was past it again the keys were listed no more.
   */
  readAt(now: number): number {
    let at = now
    for (const s of this.byHash.values()) at = Math.max(at, s.monthStart)
    return at
  }

  /** Seeds the registry with this month's keys from the database (at start-up). */
  seed(rows: readonly KeyCount[], now: number): void {
    for (const r of rows) this.count(this.state(r.api_key_hash, r.key_hint), r.last_ts, r.tenant, r.requests, now)
  }

  /**
   * The monthly request counts set again from the database (PostgreSQL mode, at each re-read of
   * the meters, in its snapshot) and this instance's calls the re-read missed: every instance's
   * calls, each once. `rows` are the calls of `readAt`'s month (taken after the snapshot): counted
   * in that month, though it has ended by `now` (the keys' next calls start the new one at 0; the
   * snapshot holds none of them). Counted in `now`'s month, they made the ended month the new one's.
   */
  reseed(rows: readonly KeyCount[], missed: readonly CallRecord[], readAt: number, now: number): void {
    // Counted afresh, in the month of the clock as it is now (on PostgreSQL, it may have moved to another zone).
    for (const s of this.byHash.values()) {
      s.requestsMonth = 0
      s.monthStart = 0
      s.monthEnd = 0
      s.laterMonths = null
    }
    this.seed(rows, readAt)
    for (const c of missed) this.count(this.state(c.api_key_hash, c.key_hint), c.ts, c.tenant, 1, now)
  }

  /**
   * Keys with a call this month (`now`'s), with their requests in it: a key whose count has not
   * rolled into it yet (no call since it began) with those stamped in it ahead of the clock; not
   * one whose only calls are stamped in a later month (listed once it comes).
   */
  thisMonth(now: number): KeyState[] {
    const month = this.clock.monthOf(now)
    const listed: KeyState[] = []
    for (const s of this.byHash.values()) {
      if (s.lastSeen === null || s.lastSeen < month.start) continue
      let k = s
      if (s.monthStart < month.start) {
        const kept = s.laterMonths?.get(month.start)
        if (kept === undefined) continue
        k = { ...s, monthStart: month.start, monthEnd: month.end, requestsMonth: kept }
      }
      if (k.requestsMonth > 0 || k.lastSeen! < k.monthEnd) listed.push(k)
    }
    return listed
  }

  private exactHash(rule: Rule): string {
    let h = this.exactHashes.get(rule)
    if (h === undefined) {
      h = createHash('sha256').update(rule.api_key_pattern).digest('hex')
      this.exactHashes.set(rule, h)
    }
    return h
  }
}
