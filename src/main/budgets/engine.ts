import type { CallRecord } from '../ledger/record'
import type { SpendTracker } from '../ledger/spend'
import type { CallContext } from '../proxy/gate'
import { PeriodClock } from '../time/zone'
import { RuleIndex, type Rule } from './rules'
import type { BudgetAlert, BudgetMonitor } from './types'

export type PeriodName = 'daily' | 'monthly'

/** What the engine knows of one API key, by hash. The raw key is never kept. */
export interface KeyState {
  hash: string
  hint: string
  tenant: string
  /** Start of the month `requestsMonth` counts in. */
  monthStart: number
  requestsMonth: number
  lastSeen: number | null
  /** Rule memo: the effective rule under index `gen`, and every prefix pattern the key was seen to match. */
  gen: number
  effective: Rule | null
  known: Set<string>
  /** Calls admitted under a `block` rule and not yet settled, and their summed worst-case cost. */
  inFlight: number
  reservedUsd: number
}

export interface PeriodState {
  period: PeriodName
  limit: number
  spent: number
  start: number
  resetsAt: number
}

export interface Refusal {
  rule: Rule
  state: PeriodState
  /** `reached`: spend is at or over the limit; `worst_case`: this call could take it over. */
  kind: 'reached' | 'worst_case'
  worstCaseUsd: number
  reservedUsd: number
}

export interface Decision {
  refuse?: Refusal
  /** Limits at their warning level (a `warn` rule's limit, or `soft_limit_pct`). */
  warnings: { rule: Rule; state: PeriodState }[]
  settle?: () => void
}

const NOTHING: Decision = { warnings: [] }

/**
 * Budget enforcement. Spend comes from the ledger's in-memory counters (O(1) per call, never a
 * table scan); on top of it the engine keeps, per key, the worst-case cost of calls admitted and
 * still in flight. A call under a `block` rule is refused when spend has reached a limit, or when
 * its own worst case exceeds what is left after the reservations; otherwise its worst case is
 * reserved until `settle`, which the proxy calls in the same synchronous step in which it
 * records the real cost. So calls running at once never take a key over a limit by more than
 * the amount their real costs exceed their worst cases.
 */
export class BudgetEngine implements BudgetMonitor {
  private index: RuleIndex
  private readonly keys = new Map<string, KeyState>()
  private readonly clock: PeriodClock
  private readonly listeners = new Set<(alert: BudgetAlert) => void>()
  private readonly fired = new Set<string>()
  /** Month of the alerts in `fired`; a new month starts the set afresh. */
  private firedMonth = 0

  constructor(
    private readonly spend: SpendTracker,
    timezone: string,
    configRules: readonly Rule[],
    runtimeRules: readonly Rule[],
    private readonly worstCase: (ctx: CallContext) => number,
  ) {
    this.clock = new PeriodClock(timezone)
    this.index = new RuleIndex(runtimeRules, configRules)
  }

  get rules(): RuleIndex {
    return this.index
  }

  /** Replaces the runtime rules (called in the same synchronous step as the database write). */
  setRuntimeRules(rules: readonly Rule[]): void {
    this.index = new RuleIndex(rules, this.index.config)
  }

  private state(hash: string, hint: string): KeyState {
    let s = this.keys.get(hash)
    if (!s) {
      s = {
        hash, hint, tenant: '', monthStart: 0, requestsMonth: 0, lastSeen: null,
        gen: 0, effective: null, known: new Set(), inFlight: 0, reservedUsd: 0,
      }
      this.keys.set(hash, s)
    }
    return s
  }

  /** The rule for a call, resolved with its raw key and remembered under the key's hash. */
  private resolve(s: KeyState, key: string): Rule | null {
    if (s.gen !== this.index.generation) {
      s.effective = this.index.effective(key)
      for (const p of this.index.matchingPrefixes(key)) s.known.add(p)
      s.gen = this.index.generation
    }
    return s.effective
  }

  /** The effective rule of a key known by hash (listings, alerts). */
  ruleFor(hash: string): Rule | null {
    const s = this.keys.get(hash)
    if (s && s.gen === this.index.generation) return s.effective
    return this.index.effectiveByHash(hash, s?.hint ?? '', s?.known ?? new Set())
  }

  private periods(rule: Rule, hash: string, now: number): PeriodState[] {
    const out: PeriodState[] = []
    const spend = this.spend.key(hash, now)
    // Monthly first: when both limits are reached, the later reset is the one that matters.
    if (rule.monthly_limit_usd !== null) {
      const m = this.clock.monthOf(now)
      out.push({ period: 'monthly', limit: rule.monthly_limit_usd, spent: spend.month, start: m.start, resetsAt: m.end })
    }
    if (rule.daily_limit_usd !== null) {
      const d = this.clock.dayOf(now)
      out.push({ period: 'daily', limit: rule.daily_limit_usd, spent: spend.day, start: d.start, resetsAt: d.end })
    }
    return out
  }

  admit(ctx: CallContext, now = Date.now()): Decision {
    if (this.index.empty) return NOTHING
    const s = this.state(ctx.apiKeyHash, ctx.keyHint)
    const rule = this.resolve(s, ctx.apiKey)
    if (!rule) return NOTHING
    const periods = this.periods(rule, s.hash, now)
    this.raise(s, rule, periods)
    const warnings = periods.filter((p) => warningLevel(rule, p)).map((state) => ({ rule, state }))
    if (rule.action !== 'block') return { warnings }

    for (const p of periods) {
      if (p.spent >= p.limit) {
        return { warnings, refuse: { rule, state: p, kind: 'reached', worstCaseUsd: 0, reservedUsd: s.reservedUsd } }
      }
    }
    const worst = this.worstCase(ctx)
    if (worst > 0) {
      for (const p of periods) {
        if (worst > p.limit - p.spent - s.reservedUsd) {
          return { warnings, refuse: { rule, state: p, kind: 'worst_case', worstCaseUsd: worst, reservedUsd: s.reservedUsd } }
        }
      }
    }
    s.inFlight++
    s.reservedUsd += worst
    let settled = false
    return {
      warnings,
      settle: () => {
        if (settled) return
        settled = true
        s.inFlight--
        // Summing and subtracting floats drifts; with nothing in flight the reservation is exactly 0.
        s.reservedUsd = s.inFlight === 0 ? 0 : Math.max(0, s.reservedUsd - worst)
      },
    }
  }

  /** Feeds the key registry from the ledger (every recorded call, refusals included). */
  observe(call: CallRecord, now = Date.now()): void {
    const s = this.state(call.api_key_hash, call.key_hint)
    if (call.key_hint) s.hint = call.key_hint
    this.count(s, call.ts, call.tenant, 1, now)
    const rule = this.ruleFor(s.hash)
    if (rule) this.raise(s, rule, this.periods(rule, s.hash, now))
  }

  private count(s: KeyState, ts: number, tenant: string, requests: number, now: number): void {
    const month = this.clock.monthOf(now).start
    if (s.monthStart !== month) {
      s.monthStart = month
      s.requestsMonth = 0
    }
    if (ts >= month) s.requestsMonth += requests
    if (s.lastSeen === null || ts >= s.lastSeen) {
      s.lastSeen = ts
      s.tenant = tenant
    }
  }

  /** Seeds the registry with this month's keys from the database (at start-up). */
  seed(rows: readonly { api_key_hash: string; key_hint: string; tenant: string; requests: number; last_ts: number }[], now = Date.now()): void {
    for (const r of rows) {
      const s = this.state(r.api_key_hash, r.key_hint)
      this.count(s, r.last_ts, r.tenant, r.requests, now)
    }
  }

  /** Keys with a call this month. */
  keysThisMonth(now = Date.now()): KeyState[] {
    const month = this.clock.monthOf(now).start
    return [...this.keys.values()].filter((s) => s.lastSeen !== null && s.lastSeen >= month && s.monthStart === month)
  }

  alerts(now = Date.now()): BudgetAlert[] {
    const out: BudgetAlert[] = []
    for (const s of this.keys.values()) {
      const rule = this.ruleFor(s.hash)
      if (!rule) continue
      for (const p of this.periods(rule, s.hash, now)) {
        const level = levelOf(rule, p)
        if (level) out.push(alertOf(rule, s, p, level))
      }
    }
    return out
  }

  onAlert(listener: (alert: BudgetAlert) => void): () => void {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }

  /** Tells listeners the first time a key reaches a level under a rule in a period. */
  private raise(s: KeyState, rule: Rule, periods: PeriodState[]): void {
    if (this.listeners.size === 0) return
    const month = periods.find((p) => p.period === 'monthly')?.start ?? this.clock.monthOf(Date.now()).start
    if (month !== this.firedMonth) {
      this.firedMonth = month
      this.fired.clear()
    }
    for (const p of periods) {
      const level = levelOf(rule, p)
      if (!level) continue
      const id = `${rule.source}\n${rule.api_key_pattern}\n${s.hash}\n${p.period}\n${p.start}\n${level}`
      if (this.fired.has(id)) continue
      this.fired.add(id)
      const alert = alertOf(rule, s, p, level)
      for (const l of this.listeners) {
        try {
          l(alert)
        } catch {
          // a listener's failure is its own
        }
      }
    }
  }
}

function warningLevel(rule: Rule, p: PeriodState): boolean {
  if (rule.action === 'warn' && p.spent >= p.limit) return true
  return rule.soft_limit_pct !== null && p.spent >= rule.soft_limit_pct * p.limit
}

function levelOf(rule: Rule, p: PeriodState): BudgetAlert['level'] | null {
  if (rule.action === 'block' && p.spent >= p.limit) return 'blocking'
  return warningLevel(rule, p) ? 'warning' : null
}

function alertOf(rule: Rule, s: KeyState, p: PeriodState, level: BudgetAlert['level']): BudgetAlert {
  return {
    api_key_pattern: rule.api_key_pattern,
    api_key_hash: s.hash,
    key_hint: s.hint,
    period: p.period,
    level,
    spent_usd: p.spent,
    limit_usd: p.limit,
    resets_at: new Date(p.resetsAt).toISOString(),
  }
}
