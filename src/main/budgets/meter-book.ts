import type { CallRecord } from '../ledger/record'
import { isBatchResult } from '../providers/batch-results'
import type { PeriodClock } from '../time/zone'
import type { BudgetAnnouncer } from './announcer'
import { alertOf, levelOf } from './levels'
import type { KeyState } from './key-state'
import type { KeyRegistry } from './key-registry'
import { Meter } from './meter'
import type { Rule, RuleIndex } from './rules'
import { type Scope, historyStart, ruleIdentity, scopeMatches, sessionHistoryStart } from './scope'
import type { BudgetAlert, CostAdjustment } from './types'

/** One aggregated slice of recorded calls, to load the meters from the database. */
export interface HistoryRow {
  api_key_hash: string
  key_hint: string
  provider: string
  model: string
  /** The model the calls requested, when the answer named another (`calls.requested_model`); else null. */
  requested: string | null
  agent: string
  tenant: string
  session: string
  /** Arrival minute (ms). */
  t: number
  cost: number
  /** Tokens of calls that ended at `last` (the last minute's rows, ./shared-history.ts RECENT_SQL); else 0. */
  tokens: number
  /** Requests admitted at `last` (the last minute's rows); else 0. */
  requests: number
  last: number
}

/**
 * The budget rules' meters: one per rule and API key (spend per period, rolling window, session,
 * last minute's requests and tokens), what counts a call in them and announces what it reaches,
 * and how they are rebuilt from the recorded calls (start-up, rule changes). The engine
 * (./engine.ts) decides calls against them; every recorded, shared or re-priced call is counted
 * here.
 */
export class MeterBook {
  private meters = new Map<Rule, Map<string, Meter>>()

  constructor(
    /** The rules in force; replaced when the runtime rules change (then `reload`). */
    public index: RuleIndex,
    private readonly keys: KeyRegistry,
    private readonly announcer: BudgetAnnouncer,
    private readonly clock: PeriodClock,
  ) {}

  /** Told by a meter that keeps spend for a later calendar period (rare: a call stamped ahead of the clock). */
  private readonly held = (start: number, end: number) => this.announcer.noteHeld(start, end)

  meter(rule: Rule, hash: string): Meter {
    let byKey = this.meters.get(rule)
    if (!byKey) {
      byKey = new Map()
      this.meters.set(rule, byKey)
    }
    let m = byKey.get(hash)
    if (!m) {
      m = new Meter(rule, this.clock, this.held)
      byKey.set(hash, m)
    }
    return m
  }

  /** Whether a key known by hash is under `rule`'s key pattern: `maybe` counts keys not yet seen with their raw key. */
  keyMatches(rule: Rule, s: KeyState, maybe: boolean): boolean {
    return this.keys.matches(this.index, rule, s, maybe)
  }

  /**
   * Rebuilds every meter from the recorded calls (start-up and rule changes): `load` gives the
   * calls since `since` and the older spend of the sessions with a call since `sessionsSince`.
   */
  reload(load: (since: number, sessionsSince: number | null) => HistoryRow[], when: number): void {
    const before = this.meters
    // A period never goes back (./meter.ts roll), across a rebuild too: a `when` before the day the
    // meters have rolled into (the wall clock stepped back across midnight) rebuilds them in that
    // day, where rebuilt in the ended one they counted the new day's calls in it, and the next call
    // started the new day again at $0.
    let now = when
    for (const byKey of before.values()) for (const m of byKey.values()) now = Math.max(now, m.readAt(when))
    this.meters = new Map()
    const active = this.index.active()
    if (active.length === 0) return
    const recent: HistoryRow[] = []
    for (const r of load(historyStart(active, this.clock, now), sessionHistoryStart(active, now))) {
      const s = this.keys.state(r.api_key_hash, r.key_hint)
      this.account(s, r, r.t, r.cost, 0, r.session, r.last, now)
      if ((r.tokens > 0 || r.requests > 0) && r.last > now - 60_000) {
        this.countRecent(s, r, r)
        recent.push(r)
      }
    }
    // What the recorded calls cannot give: calls in flight (their reservations), and the last
    // minute's requests and tokens as counted (those of calls not stored yet among them), kept by
    // the same rule across the change: the one of the same pattern and scope, else the rule
    // of the same pattern with another scope (the rule edited, or a runtime rule replacing or
    // giving back a config rule).
    this.carryOver(before, active, recent, now)
    // Thresholds the recorded spend already crossed were announced when it crossed them, before
    // this restart or rule change: they are not announced again.
    for (const [, byKey] of this.meters) {
      for (const [hash, m] of byKey) {
        const s = this.keys.get(hash)
        if (s) this.announcer.thresholds(s, m, now, true)
      }
    }
  }

  /**
   * Moves the calls in flight and the last minute's counts of the meters `before` a reload onto
   * the rules now in force: a rule of the same pattern and scope, else the rule of the same pattern
   * with another scope (the rule edited, or a runtime rule in a config rule's place). That rule
   * then counts all the calls in flight until they settle, those its new scope no longer matches
   * among them: for their few seconds it may refuse early, but never lets a key past its limits by
   * what it had in flight (README, Budgets). An edited rule's last minute also counts the calls of
   * `recent` (the ledger's last minute) that its new scope matches and its old one did not: the
   * count carried over never held them (a scope widened: the key's calls it now matches).
   */
  private carryOver(before: Map<Rule, Map<string, Meter>>, active: readonly Rule[], recent: readonly HistoryRow[], now: number): void {
    const same = new Map(active.map((r) => [ruleIdentity(r), r]))
    // A pattern names one rule in force (a runtime rule replaces the config rule of its pattern).
    const byPattern = new Map<string, Rule | null>()
    for (const r of active) byPattern.set(r.api_key_pattern, byPattern.has(r.api_key_pattern) ? null : r)
    const moves: [Rule, Map<string, Meter>, Rule | null][] = []
    const edited: [Rule, Map<string, Meter>, Rule | null][] = []
    for (const [rule, byKey] of before) {
      const next = same.get(ruleIdentity(rule))
      if (next) moves.push([next, byKey, null])
      else {
        const n = byPattern.get(rule.api_key_pattern)
        if (n) edited.push([n, byKey, rule])
      }
    }
    // The ledger's last minute by key, for the edited rules' meters (rule edits are rare: built only then).
    const byHash = new Map<string, HistoryRow[]>()
    if (edited.length > 0) {
      for (const r of recent) {
        const list = byHash.get(r.api_key_hash)
        if (list) list.push(r)
        else byHash.set(r.api_key_hash, [r])
      }
    }
    const taken = new Set<string>()
    for (const [next, byKey, old] of [...moves, ...edited]) {
      for (const [hash, m] of byKey) {
        const k = `${ruleIdentity(next)}\u0000${hash}`
        if (!m.busy(now) || taken.has(k)) continue
        taken.add(k)
        const meter = this.meter(next, hash)
        meter.carryOver(m)
        if (!old) continue
        for (const r of byHash.get(hash) ?? []) if (scopeMatches(next, r) && !scopeMatches(old, r)) meter.countAlso(r.last, r.requests, r.tokens)
      }
    }
  }

  /**
   * Counts a call in the meter of every rule whose patterns it matches; `touched` (a call as it is
   * recorded, not a reload) gets those meters, their rolling windows' thresholds re-armed first on
   * the spend before it: whichever rule decided the call (README: Alerts).
   */
  account(s: KeyState, scope: Scope, ts: number, cost: number, tokens: number, session: string, last: number, now: number, touched?: Meter[]): void {
    for (const rule of this.index.active()) {
      if (!scopeMatches(rule, scope) || !this.keyMatches(rule, s, true)) continue
      const m = this.meter(rule, s.hash)
      if (touched && rule.window_hours !== null) this.announcer.rearm(s, m, now)
      m.add(ts, cost, session, last, now)
      m.addTokens(tokens, now)
      touched?.push(m)
    }
  }

  /**
   * The last minute's requests and tokens read back from the ledger (a reload), at `last`: when
   * the requests arrived, when the calls with the tokens ended. Tokens count in every rule the
   * calls match, as when they were recorded. Requests counted in the rule that decided each call;
   * a key known only by hash may not be known yet to match the rule that decides it (its patterns
   * are learnt from its calls, another instance's among them), so they count in every rule the key
   * may match: only the deciding rule's count is read when its calls are decided.
   */
  private countRecent(s: KeyState, scope: Scope, r: Pick<HistoryRow, 'tokens' | 'requests' | 'last'>): void {
    for (const rule of this.index.active()) {
      if ((rule.tokens_per_minute === null || !(r.tokens > 0)) && (rule.requests_per_minute === null || !(r.requests > 0))) continue
      if (!scopeMatches(rule, scope) || !this.keyMatches(rule, s, true)) continue
      const m = this.meter(rule, s.hash)
      m.addTokens(r.tokens, r.last)
      m.addRequest(r.last, r.requests)
    }
  }

  /** Counts a recorded call in the meters of every rule it matches; returns those meters. */
  accountCall(s: KeyState, call: CallRecord, now: number): Meter[] {
    // The model the call requested as the ledger keeps it (null when the answer names the same):
    // the meters rebuilt from the ledger (reload) then match exactly what this counted.
    const scope: Scope = { provider: call.provider, model: call.model, requested: call.requested_model, agent: call.agent, tenant: call.tenant }
    const touched: Meter[] = []
    // Money only: a plan's (subscription) call has an API-equivalent value, not a cost (README: Plans).
    const cost = call.billing === 'subscription' ? 0 : call.cost_usd
    this.account(s, scope, call.ts, cost, minuteTokens(call, now), call.session, call.ts, now, touched)
    return touched
  }

  /** The levels and thresholds a key's meters that just grew have reached (those of rules its key pattern matches). */
  announce(s: KeyState, meters: readonly Meter[], session: string, now: number): void {
    for (const m of meters) {
      if (!this.keyMatches(m.rule, s, false)) continue
      // One reading of the meter for both: the levels (with the session's) and the thresholds (without).
      const periods = m.periods(now, session)
      this.announcer.raise(s, m.rule, periods, now)
      this.announcer.thresholds(s, m, now, false, periods)
    }
  }

  /** Another instance's requests (admitted or stored), in the last-minute count of the rule that decides the key's calls here. */
  countOthersRequests(s: KeyState, scope: Scope, n: number, now: number): void {
    if (!(n > 0)) return
    const rule = this.decidingRule(s, scope)
    if (rule && rule.requests_per_minute !== null) this.meter(rule, s.hash).addRequest(now, n)
  }

  /** The rule the engine's `decide` would pick for a call of a key known here by hash (its first rule whose scope matches). */
  private decidingRule(s: KeyState, scope: Scope): Rule | null {
    const rules = s.gen === this.index.generation ? s.candidates : this.index.active().filter((r) => this.keyMatches(r, s, false))
    return rules.find((r) => scopeMatches(r, scope)) ?? null
  }

  /**
   * Re-priced calls and background responses' real usage: each call's cost moved by `delta`, in
   * the meter of every rule it counts in, as a recorded call was counted; thresholds it now
   * crosses are announced as for a new call.
   */
  adjust(changes: readonly CostAdjustment[], now: number): void {
    for (const c of changes) {
      if (c.delta === 0 || !Number.isFinite(c.delta)) continue
      const s = this.keys.state(c.api_key_hash, '')
      const scope: Scope = { provider: c.provider, model: c.model, requested: c.requested_model, agent: c.agent, tenant: c.tenant }
      const touched: Meter[] = []
      for (const rule of this.index.active()) {
        if (!scopeMatches(rule, scope) || !this.keyMatches(rule, s, true)) continue
        const m = this.meter(rule, s.hash)
        if (c.delta > 0 && rule.window_hours !== null) this.announcer.rearm(s, m, now)
        m.adjust(c.ts, c.delta, c.session, now)
        touched.push(m)
      }
      if (c.delta > 0) this.announce(s, touched, c.session, now)
    }
  }

  /**
   * The thresholds every key's meters reached in calendar periods that began with spend kept for
   * them, not announced yet (./announcer.ts `announceHeld`): when a period starts, and after
   * start-up's read.
   */
  announceHeld(now: number): void {
    for (const { keys } of this.status()) for (const { key, meter } of keys) this.announcer.announceHeld(key, meter, now)
  }

  /**
   * Every rule in force with the meter of each key it applies to (a key whose calls a rule
   * counted but whose key pattern it does not match is left out).
   */
  status(): { rule: Rule; keys: { key: KeyState; meter: Meter }[] }[] {
    return this.index.active().map((rule) => {
      const keys: { key: KeyState; meter: Meter }[] = []
      for (const [hash, meter] of this.meters.get(rule) ?? []) {
        const key = this.keys.get(hash)
        if (key && this.keyMatches(rule, key, false)) keys.push({ key, meter })
      }
      return { rule, keys }
    })
  }

  /** The levels every key's meters are at now (warnings and limits reached). */
  alerts(now: number): BudgetAlert[] {
    const out: BudgetAlert[] = []
    for (const { rule, keys } of this.status()) {
      for (const { key, meter } of keys) {
        for (const p of meter.periods(now)) {
          const level = levelOf(rule, p)
          if (level) out.push(alertOf(rule, key, p, level))
        }
      }
    }
    return out
  }
}

/**
 * The tokens a recorded call adds to the last minute's count (`tokens_per_minute`), as a reload
 * reads them (./shared-history.ts RECENT_SQL): none for a Batch API request stored from its
 * results file (it ran at the batch's pace, not this minute's: README, Budgets), and for a call
 * stored from an agent's log only if it ended in the last minute. The proxy's own calls end now.
 */
function minuteTokens(call: CallRecord, now: number): number {
  if (isBatchResult(call.endpoint)) return 0
  if (call.source === 'import' && !(call.ts + call.latency_ms > now - 60_000)) return 0
  return call.input_tokens + call.output_tokens
}
