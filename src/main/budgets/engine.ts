import type { CallRecord } from '../ledger/record'
import type { CallContext } from '../proxy/gate'
import { PeriodClock } from '../time/zone'
import type { AnnouncedRow } from '../ledger/side-writes'
import type { AnnouncedStore } from './announced'
import { BudgetAnnouncer, type ThresholdEvent } from './announcer'
import type { KeyState } from './key-state'
import { KeyRegistry, type KeyCount } from './key-registry'
import { type Meter, type PeriodState, latestReset } from './meter'
import { type HistoryRow, MeterBook } from './meter-book'
import { isPrefix } from './pattern'
import { RuleIndex, type Rule } from './rules'
import { BACKGROUND_HOLD_MS, BackgroundHolds, type HoldInfo } from './background-holds'
import { type Decision, NOTHING, type PendingBackground, type Warning, warningsOf } from './decision'
import { type Scope, keptPattern, keptRuleIdentity, ruleIdentity, scopeMatches } from './scope'
import type { AdmissionNotice } from './feed/admission-told'
import { SharedCounts } from './shared-counts'
import { MemoryBudgetState } from './state/memory'
import type { BudgetState, Reservation, ReserveOutcome } from './state/types'
import type { BudgetAlert, BudgetMeters, CostAdjustment, LearntUsage } from './types'
import { reached } from './reached'
import { teaches } from './call-fees'

/** How often a background hold kept before this start that the budget state could not hold again (PostgreSQL away) is tried again. */
export const REHOLD_RETRY_MS = 5000

/** How much to reserve for a call, and what answered calls teach about the next ones. */
export interface CostModel {
  worstCase(ctx: CallContext): number
  expected(ctx: CallContext): number
  learn(ctx: CallContext, call: LearntUsage): void
  /**
   * Every call observed with a status under 400, gated or not (a successor response Codex's server
   * starts by itself is recorded, never gated): what a turn continuing it will carry (./conversations.ts).
   */
  answered?(call: CallRecord, ctx: CallContext | null): void
  /** The model a requested model was last answered as (an Azure deployment, an alias), if another. */
  answeredAs?(provider: string, model: string): string | undefined
}

/**
 * Budget enforcement. Each rule keeps a meter per API key (spend per period, rolling window,
 * session, last minute's requests and tokens), fed by every recorded call in the same
 * synchronous step as the ledger records it, and loaded from the database at start-up and when
 * the rules change. A call under a `block` rule is refused when a limit is reached or when the
 * calls in flight are expected to reach it; otherwise its expected cost (or, with
 * `reserve: max_tokens`, its worst case) is reserved until `settle`.
 */
export class BudgetEngine implements BudgetMeters {
  /** The rules' meters per key, and what counts calls in them (./meter-book.ts). */
  private readonly book: MeterBook
  readonly clock: PeriodClock
  private readonly keys: KeyRegistry
  /**
   * PostgreSQL: told of each call admitted under a rule with a per-minute request limit, as it is
   * admitted, so that the other instances count it then (./feed/admissions.ts); null on SQLite.
   */
  onAdmitted: ((hash: string, scope: Scope, known: readonly string[]) => AdmissionNotice) | null = null
  /**
   * PostgreSQL: told of each call this instance counts with `observe` (recorded by its ledger, or
   * stored another way: a batch's requests, an import), so a read of the meters under way that
   * missed it counts it again (./shared.ts `ownCall`); null on SQLite.
   */
  onObserved: ((call: CallRecord) => void) | null = null
  /** PostgreSQL: told of this instance's own cost moves and the transaction that made them (./shared.ts), as `onObserved`. */
  onMoved: ((changes: readonly CostAdjustment[], xid: number) => void) | null = null
  /**
   * The meters hold the stored calls. SQLite: read before the first call is decided. PostgreSQL:
   * false until the first read of every instance's calls (./shared.ts), made without holding up
   * start-up; until then they hold only what this process counted since it started.
   */
  metersRead = true
  private readonly announcer: BudgetAnnouncer
  /** The call whose `settle` just ran: the ledger records it next, in the same synchronous step. */
  private settling: CallContext | null = null
  /** The reservations of background responses still running (README: overshoot). */
  readonly holds = new BackgroundHolds()
  /** PostgreSQL mode: the other instances' calls in the key registry and the meters (./shared-counts.ts). */
  readonly shared: SharedCounts

  constructor(
    /** The zone periods are counted in, or the clock itself (a server's shared budget clock: ./clock.ts). */
    timezone: string | PeriodClock,
    /** The first day of a week (0 = Sunday); with a clock given, the clock's own. */
    weekStart: number,
    configRules: readonly Rule[],
    runtimeRules: readonly Rule[],
    private readonly cost: CostModel,
    /**
     * The recorded calls since `since`, and (when `sessionsSince` is not null) the older spend of
     * the sessions with a call since `sessionsSince`, each row's minute before `since`.
     */
    private readonly loadHistory: (since: number, sessionsSince: number | null) => HistoryRow[] = () => [],
    /** Where `block` rules' money limits are reserved: in process (default) or in PostgreSQL. */
    readonly budgetState: BudgetState = new MemoryBudgetState(),
  ) {
    this.clock = typeof timezone === 'string' ? new PeriodClock(timezone, weekStart) : timezone
    this.announcer = new BudgetAnnouncer(this.clock)
    this.keys = new KeyRegistry(this.clock)
    this.book = new MeterBook(new RuleIndex(runtimeRules, configRules), this.keys, this.announcer, this.clock)
    this.shared = new SharedCounts(this.book, this.keys, this.announcer)
  }

  get rules(): RuleIndex {
    return this.book.index
  }

  /** Replaces the runtime rules (called in the same synchronous step as the database write) and reloads the meters. */
  setRuntimeRules(rules: readonly Rule[], now = Date.now()): void {
    this.book.index = new RuleIndex(rules, this.book.index.config)
    this.reload(now)
    this.onRules?.(this.prefixPatterns())
  }

  /** Told the prefix patterns of the rules in force each time the runtime rules change (kept patterns swept). */
  onRules: ((patterns: readonly string[]) => void) | null = null

  /** The prefix patterns of the rules in force (config and runtime). */
  prefixPatterns(): string[] {
    return [...new Set(this.book.index.active().map((r) => r.api_key_pattern).filter(isPrefix))]
  }

  /** Rebuilds every meter from the recorded calls (start-up and rule changes). */
  reload(now = Date.now()): void {
    this.book.reload(this.loadHistory, now)
  }

  /** The effective rule of a key known by hash (listings): its first rule with no scope, else its first. */
  ruleFor(hash: string): Rule | null {
    return this.keys.ruleFor(this.book.index, hash)
  }

  /** Admission with a synchronous state (memory: every existing caller and test). */
  admit(ctx: CallContext, now = Date.now()): Decision {
    const d = this.decide(ctx, now)
    if (d instanceof Promise) throw new Error('BudgetEngine.admit: the budget state is asynchronous; use decide()')
    return d
  }

  /**
   * Decides a call: no rule, a `warn` rule, a rate limit or a limit this instance already sees
   * reached are decided here, synchronously; a `block` rule's money limits are reserved against
   * the budget state (a promise on postgres).
   */
  decide(ctx: CallContext, now = Date.now()): Decision | Promise<Decision> {
    if (this.book.index.empty) return NOTHING
    const s = this.keys.state(ctx.apiKeyHash, ctx.keyHint)
    // A read or cancel of something already billed adds no spend: never refused, never counted
    // (README: Budgets). Its raw key still tells which rules' patterns it matches, so what the
    // read brings (a batch's requests, recorded from its results file) counts under them.
    if (ctx.shape.free) {
      this.keys.resolve(this.book.index, s, ctx.apiKey)
      return NOTHING
    }
    // A rule names either the model requested or the one the answer names (a dated version, the
    // model behind an Azure deployment); the call's answer is not in yet, so the name its model was
    // last answered as stands for it (a rule that counts these calls also decides them).
    const answered = this.cost.answeredAs?.(ctx.provider.name, ctx.shape.model)
    const scope: Scope = {
      provider: ctx.provider.name,
      model: ctx.shape.model,
      requested: answered !== undefined && answered !== ctx.shape.model ? answered : null,
      agent: ctx.agent,
      tenant: ctx.tenant,
    }
    let rule: Rule | null = null
    for (const r of this.keys.resolve(this.book.index, s, ctx.apiKey)) {
      if (scopeMatches(r, scope)) {
        rule = r
        break
      }
    }
    if (!rule) return { warnings: [], settle: this.learnFrom(ctx) }
    const m = this.book.meter(rule, s.hash)
    const periods = m.periods(now, ctx.session)
    const rate = m.rate(now)
    this.announcer.raise(s, rule, periods, now)
    const warnings = warningsOf(rule, periods)
    if (rule.action !== 'block') {
      // This call is one of the minute's requests too: the 61st under a 60 limit reads 61/60.
      if (rate) warnings.push({ rule, state: null, rate: rate.kind === 'requests' ? { ...rate, used: rate.used + 1 } : rate })
      const unsent = this.countRequest(ctx, s, rule, scope, m, now)
      return { warnings, settle: this.learnFrom(ctx), unsent }
    }
    if (rate) return { warnings, refuse: { rule, kind: 'rate', state: null, rate, worstCaseUsd: 0, reservedUsd: m.reservedUsd } }
    // This instance's own spend already at a limit: refused without asking the shared state,
    // naming the reached limit that frees last.
    const atLimit = latestReset(periods.filter((p) => reached(p.spent, p.limit)))
    if (atLimit) return { warnings, refuse: { rule, kind: 'reached', state: atLimit, rate: null, worstCaseUsd: 0, reservedUsd: m.reservedUsd } }

    const amount = rule.reserve === 'max_tokens' ? this.cost.worstCase(ctx) : this.cost.expected(ctx)
    // Held background responses past their bound stop holding before this call is decided.
    if (this.holds.size > 0) this.holds.expire(now)
    const out = this.budgetState.reserve({ rule, meter: m, keyHash: s.hash, session: ctx.session, ts: ctx.ts, periods, amount })
    if (out instanceof Promise) return out.then((o) => this.reserved(o, ctx, s, scope, m, periods, warnings, now, amount))
    return this.reserved(out, ctx, s, scope, m, periods, warnings, now, amount)
  }

  /**
   * An admitted call in its rule's last-minute request count, here and (PostgreSQL) on the other
   * instances; returns what takes it back if the call is not sent after all (`Decision.unsent`).
   */
  private countRequest(ctx: CallContext, s: KeyState, rule: Rule, scope: Scope, m: Meter, now: number): () => void {
    m.addRequest(now)
    const announced = rule.requests_per_minute !== null && this.onAdmitted !== null
    if (announced) {
      ctx.admission = this.onAdmitted!(s.hash, scope, this.keys.patterns(s))
      ctx.rateAnnounced = true
    }
    return () => {
      m.takeBackRequest(now)
      if (announced) this.onWithdrawn?.(s.hash, scope)
    }
  }

  /** PostgreSQL: told of an admission told to `onAdmitted` whose call was not sent after all. */
  onWithdrawn: ((hash: string, scope: Scope) => void) | null = null

  /** A `settle` that only marks the call as the one the ledger records next (nothing reserved). */
  private learnFrom(ctx: CallContext): () => void {
    return () => {
      this.settling = ctx
    }
  }

  /** The decision once the budget state has reserved (or refused). */
  private reserved(
    o: ReserveOutcome, ctx: CallContext, s: KeyState, scope: Scope, m: Meter, periods: PeriodState[], warnings: Warning[], now: number, amount: number,
  ): Decision {
    const rule = m.rule
    if (!o.ok) {
      return { warnings, refuse: { rule, kind: o.kind, state: o.state, rate: null, worstCaseUsd: o.worstCaseUsd, reservedUsd: o.reservedUsd } }
    }
    const unsent = this.countRequest(ctx, s, rule, scope, m, now)
    const r = o.reservation
    return {
      unsent,
      // Shared figures (postgres) decide the warnings: they include every instance's spend.
      warnings: o.periods === periods ? warnings : warningsOf(rule, o.periods),
      settle: (costUsd = 0, pending?: PendingBackground) => {
        this.settling = ctx
        if (pending) {
          const info = { ...pending, keyHash: s.hash, ts: ctx.ts, session: ctx.session, rule: keptRuleIdentity(rule), amount, until: now + BACKGROUND_HOLD_MS }
          const state = this.budgetState
          const hold = state.hold ? (usd: number) => state.hold!({ rule, meter: m, keyHash: s.hash, session: ctx.session, ts: ctx.ts, periods, amount: usd }) : undefined
          return this.holds.holdJob(info, r, costUsd, hold, ctx)
        }
        r.settle(costUsd)
        return costUsd > 0 ? r.settles : undefined
      },
    }
  }

  /** Feeds the meters and the key registry from the ledger (every recorded call, refusals included). */
  observe(call: CallRecord, now = Date.now()): void {
    this.onObserved?.(call)
    const s = this.keys.state(call.api_key_hash, call.key_hint)
    if (call.key_hint) s.hint = call.key_hint
    this.keys.count(s, call.ts, call.tenant, 1, now)
    let ctx = this.settling
    this.settling = null
    if (ctx && (ctx.ts !== call.ts || ctx.apiKeyHash !== call.api_key_hash)) ctx = null
    if (call.status < 400 && this.cost.answered) {
      try {
        this.cost.answered(call, ctx)
      } catch {
        // best effort, as learning
      }
    }
    if (ctx && call.status < 400 && teaches(call)) {
      try {
        this.cost.learn(ctx, call)
      } catch {
        // learning is best effort; the call is recorded all the same
      }
    }
    if (this.book.index.empty) return
    this.book.announce(s, this.book.accountCall(s, call, now), call.session, now)
  }

  endBackground(provider: string, responseId: string): void {
    this.holds.release(provider, responseId)
  }

  /**
   * A background response held here took its real usage (../pricing/background.ts, before the
   * cost move that ends its hold): later background jobs of its model are expected to cost as
   * much (./expected.ts), not as the ordinary calls its reservation was taken from.
   */
  learnBackground(provider: string, responseId: string, usage: LearntUsage): void {
    const ctx = this.holds.contextOf(provider, responseId)
    if (!ctx || usage.output_tokens <= 0) return
    try {
      this.cost.learn(ctx, usage)
    } catch {
      // learning is best effort
    }
  }

  /**
   * Holds again, at start-up, the reservations background responses held before it
   * (./background-holds.ts): under the same rule (pattern and scope) and key, whatever spend is
   * at now (they were admitted before); a rule whose scope was edited meanwhile (in the config
   * file, or through the admin API, before this start) is the same rule: the one rule now in force
   * of its pattern holds it, as a rule change without a restart keeps the calls in flight
   * (./meter-book.ts carryOver). Builds before this one forgot it, and the key's next job was let
   * past the limit while the first still ran. Those past their bound, or whose rule is gone (or no
   * longer blocks), are forgotten. One the budget state cannot hold now (PostgreSQL away at
   * start-up) stays in the file and is tried again every REHOLD_RETRY_MS until it is held, let go
   * (its result read) or past its bound: builds before this one forgot it, and once PostgreSQL was
   * back the key's next job was let past the limit while the first still ran.
   */
  async rehold(now = Date.now()): Promise<void> {
    const kept = this.holds.kept()
    for (const h of kept) this.holds.waitFor(h)
    for (const h of kept) await this.reholdOne(h, now)
  }

  private async reholdOne(h: HoldInfo, now: number): Promise<void> {
    // Let go meanwhile (its result read), or the server stopped.
    if (!this.holds.isWaiting(h)) return
    const rule = h.until > now ? holdRule(this.book.index.active(), h.rule) : undefined
    if (!rule || !this.budgetState.hold) {
      this.holds.forget(h)
      return
    }
    const m = this.book.meter(rule, h.keyHash)
    const req = { rule, meter: m, keyHash: h.keyHash, session: h.session, ts: h.ts, periods: m.periods(now, h.session), amount: h.amount }
    let r: Reservation
    try {
      r = await this.budgetState.hold(req)
    } catch {
      // The budget state cannot hold it now (PostgreSQL away): kept in the file, tried again.
      this.holds.retried++
      setTimeout(() => void this.reholdOne(h, Date.now()), REHOLD_RETRY_MS).unref()
      return
    }
    if (this.holds.isWaiting(h)) this.holds.keep(h, () => r.release())
    else r.release()
  }

  /**
   * Re-priced calls (POST /api/admin/prices/…/reprice): each call's cost moved by `delta`, in the
   * meter of every rule it counts in, as `observe` counted it; thresholds it now crosses are
   * announced as for a new call.
   */
  adjust(changes: readonly CostAdjustment[], now = Date.now(), committedIn: number | null = null): void {
    if (committedIn !== null) this.onMoved?.(changes, committedIn)
    // A background response's real usage taken (here or on another instance) ends its hold; a
    // re-price of a job still running does not (its usage is still to come).
    for (const c of changes) {
      // An imported call superseded is no request of its key (the admin API's requests_month).
      if (c.requests) this.keys.uncount(this.keys.state(c.api_key_hash, ''), c.ts, c.requests, c.latest, now)
      if (!c.usage_in) continue
      // By the response's id: a key's jobs started in the same millisecond each hold their own.
      if (c.response_id !== undefined) this.holds.release(c.provider, c.response_id)
      else this.holds.releaseCall(c.api_key_hash, c.ts, c.provider)
    }
    if (!this.book.index.empty) this.book.adjust(changes, now)
  }

  /**
   * Keeps the prefix patterns each key is seen to match (`save`) and knows again those kept before
   * this start (`kept`): a key's spend is listed, alerted and exported under its rules after a
   * restart, before its next call brings the raw key (./key-patterns.ts).
   */
  keepPatterns(kept: Iterable<{ api_key_hash: string; pattern: string }>, save: (hash: string, patterns: readonly string[]) => void): void {
    this.keys.remember(kept)
    this.keys.onLearnt = save
  }

  /** Keeps each threshold announced in a calendar period in `store`, not to announce it again after a restart (./announced.ts). */
  keepAnnounced(store: AnnouncedStore): void {
    this.announcer.keep = (id, until, now) => store.save(id, until, now)
    this.announcer.keepHeld()
  }

  /**
   * Announces the thresholds crossed by spend kept for a calendar period before it began (calls
   * stamped ahead of the clock), not announced yet: when the period starts, with no call needed,
   * and after start-up's read (./held-check.ts). Off the proxy's path.
   */
  announceHeld(now = Date.now()): void {
    if (!this.book.index.empty) this.book.announceHeld(now)
  }

  /** The thresholds announced before this start (or by another instance), in periods not yet ended: not announced again. */
  rememberAnnounced(rows: Iterable<AnnouncedRow>, now = Date.now()): void {
    this.announcer.remember(rows, now)
  }

  /** Seeds the key registry with this month's keys from the database (at start-up). */
  seed(rows: readonly KeyCount[], now = Date.now()): void {
    this.keys.seed(rows, now)
  }

  /** Keys with a call this month. */
  keysThisMonth(now = Date.now()): KeyState[] {
    return this.keys.thisMonth(now)
  }

  /** Every rule in force with the meter of each key it applies to (./meter-book.ts). */
  status(): ReturnType<MeterBook['status']> {
    return this.book.status()
  }

  alerts(now = Date.now()): BudgetAlert[] {
    return this.book.alerts(now)
  }

  onAlert(listener: (alert: BudgetAlert) => void): () => void {
    return this.announcer.onAlert(listener)
  }

  onThreshold(listener: (e: ThresholdEvent) => void): () => void {
    return this.announcer.onThreshold(listener)
  }

  /** Calendar thresholds a reload finds crossed, or the meters cross, that an instance kept as announced (./announcer.ts `onRestored`). */
  onRestored(listener: (e: ThresholdEvent) => void): () => void {
    return this.announcer.onRestored(listener)
  }
}

/** The `block` rule a kept hold (its rule's identity, ./scope.ts) is held again under at start-up: see BudgetEngine.rehold. */
function holdRule(active: readonly Rule[], identity: string): Rule | undefined {
  // Kept with its pattern hashed; a hold kept by builds before that names the pattern as written.
  const same = active.find((r) => r.action === 'block' && (keptRuleIdentity(r) === identity || ruleIdentity(r) === identity))
  if (same) return same
  let pattern: unknown
  try {
    pattern = (JSON.parse(identity) as unknown[])[0]
  } catch {
    return undefined
  }
  // A pattern names one rule in force (a runtime rule replaces the config rule of its pattern).
  const of = active.filter((r) => keptPattern(r.api_key_pattern) === pattern || r.api_key_pattern === pattern)
  return of.length === 1 && of[0].action === 'block' ? of[0] : undefined
}
