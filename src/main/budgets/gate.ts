import { errorBody } from '../http/errors'
import type { Admission, CallContext, CallGate } from '../proxy/gate'
import type { Decision, Refusal, Warning } from './decision'
import type { BudgetEngine } from './engine'
import type { PeriodState, RateState } from './meter'
import type { DeferredCheck, RunawayDetector, RunawayEvent } from './runaway'
import { isPrefix, shownPattern } from './pattern'
import { DRIFT, reached, reachedAt } from './reached'

export const WARNING_HEADER = 'x-burnrate-budget-warning'
/** The `error` recorded for a call refused by a budget. */
export const REFUSAL_REASON = 'budget_exceeded'
/** The `error` recorded for a call refused by a rate limit (or a session's spend rate). */
export const RATE_REASON = 'rate_limited'
/** The `error` recorded for a call refused as a runaway loop. */
export const LOOP_REASON = 'loop_detected'
export const RUNAWAY_HEADER = 'x-burnrate-runaway-warning'

function runawayText(e: RunawayEvent): string {
  return e.kind === 'loop'
    ? `loop: the same request tail ${e.count} times in session ${e.session}`.replace(/[^\x20-\x7e]/g, '?')
    : `spend_rate: ${e.usd_last_minute.toFixed(4)} USD in the last minute in session ${e.session}`.replace(/[^\x20-\x7e]/g, '?')
}

function runawayRefusal(e: RunawayEvent, windowMinutes: number, limit: number | null): Admission {
  if (e.kind === 'loop') {
    return {
      refuse: {
        status: 429,
        headers: { 'x-should-retry': 'false' },
        body: errorBody(
          'loop_detected',
          `Session "${e.session}" sent the same ${e.model || 'request'} conversation tail ${e.count} times in ${windowMinutes} minutes: it looks stuck in a loop, so Burnrate refused this call. Change the conversation or start a new session.`,
          { session: e.session, model: e.model, repeats: e.count, window_minutes: windowMinutes },
        ),
        reason: LOOP_REASON,
      },
    }
  }
  return {
    refuse: {
      status: 429,
      headers: { 'x-should-retry': 'true', 'retry-after': '60' },
      body: errorBody(
        'rate_limited',
        `Session "${e.session}" spent $${e.usd_last_minute.toFixed(4)} in the last minute, over the $${limit}/minute spend-rate limit (runaway.spend_rate); retry in a minute.`,
        { session: e.session, period: 'rate', unit: 'session_usd_per_minute', limit, used: e.usd_last_minute },
      ),
      reason: RATE_REASON,
    },
  }
}

/**
 * Dollars with 2 decimals, or as many (up to 6) as the limit needs (`0.004/0.005`); a spend that
 * differs from its limit by more than the budgets' float drift gets more (up to 12) until it no
 * longer reads as the limit (`9.996/10.00`, not `10.00/10.00` while $0.004 is left).
 */
export function formatUsd(n: number, limit: number): string {
  const text = String(limit)
  const dot = text.indexOf('.')
  const decimals = dot === -1 || text.includes('e') ? 2 : Math.min(6, Math.max(2, text.length - dot - 1))
  let out = n.toFixed(decimals)
  if (Number.isFinite(n) && Number.isFinite(limit) && Math.abs(n - limit) > Math.abs(limit) * DRIFT) {
    const shown = Number(limit.toFixed(decimals))
    for (let d = decimals + 1; d <= 12 && Number(out) === shown; d++) out = n.toFixed(d)
  }
  return out
}

function rateText(r: RateState): string {
  return `${r.used}/${r.limit} ${r.kind} per minute`
}

/** A rule's name in a header: a whole key's hint with `...` for its `…` (a header carries ASCII). */
function headerName(pattern: string): string {
  return isPrefix(pattern) ? pattern : shownPattern(pattern).replace('\u2026', '...')
}

/** `<pattern> daily 4.12/5.00 USD` (a rule on a whole key named by the key's hint); anything a header cannot carry is replaced by `?`. */
export function warningText(pattern: string, p: PeriodState): string {
  const text = `${headerName(pattern)} ${p.period} ${formatUsd(p.spent, p.limit)}/${formatUsd(p.limit, p.limit)} USD`
  return text.replace(/[^\x20-\x7e]/g, '?')
}

function warningOf(w: Warning): string {
  if (w.state) return warningText(w.rule.api_key_pattern, w.state)
  return `${headerName(w.rule.api_key_pattern)} rate ${w.rate ? rateText(w.rate) : ''}`.replace(/[^\x20-\x7e]/g, '?')
}

const PERIOD_WORDS: Record<PeriodState['period'], string> = {
  daily: 'daily', weekly: 'weekly', monthly: 'monthly', window: 'rolling-window', session: 'per-session',
}

function periodWords(rule: Refusal['rule'], p: PeriodState): string {
  return p.period === 'window' ? `${rule.window_hours}-hour rolling-window` : PERIOD_WORDS[p.period]
}

function refusalMessage(r: Refusal & { state: PeriodState }, hint: string, session: string, asked: boolean): string {
  const { rule, state: p } = r
  const who = p.period === 'session' ? `Session "${session}"` : hint ? `API key ${hint}` : 'This API key'
  const limit = `the ${periodWords(rule, p)} limit of $${formatUsd(p.limit, p.limit)} set by budget rule "${shownPattern(rule.api_key_pattern)}" (${rule.source})`
  const until = p.resetsAt === null ? 'for the rest of this session; start a new session to continue' : `until ${new Date(p.resetsAt).toISOString()}`
  if (r.kind === 'reached') {
    return `${who} has spent $${formatUsd(p.spent, p.limit)} of ${limit}; calls are refused ${until}.`
  }
  if (r.kind === 'reserved') {
    return (
      `${who} has spent $${formatUsd(p.spent, p.limit)} of ${limit}, and the calls still in flight are expected to cost ` +
      `$${r.reservedUsd.toFixed(6)}, which reaches it; retry when they have finished, or wait ${until}.`
    )
  }
  const left = Math.max(0, p.limit - p.spent - (p.period === 'session' ? 0 : r.reservedUsd))
  const inFlight = r.reservedUsd > 0 && p.period !== 'session' ? `, after $${r.reservedUsd.toFixed(6)} reserved by calls in flight` : ''
  // A call billed by what it asks for (an xAI video's seconds: CallShape.expectedUsd), not by tokens.
  const why = asked ? 'what it asks for at the published price' : 'prompt size plus max output tokens'
  return (
    `This call could cost up to $${r.worstCaseUsd.toFixed(6)} (${why}), more than the ` +
    `$${left.toFixed(6)} left of ${limit} (spent $${formatUsd(p.spent, p.limit)}${inFlight}); ` +
    `${asked ? 'ask for less' : 'lower max_tokens'}, or wait ${until}.`
  )
}

/** Retry-After (seconds) of a refusal for calls in flight alone: about when a short call ends. */
const IN_FLIGHT_RETRY_S = 5

function retryAfter(at: number, now: number): string {
  return String(Math.max(1, Math.ceil((at - now) / 1000)))
}

type Runaway = { detector: RunawayDetector; windowMinutes: number; usdPerMinute: number | null }

/** The proxy's gate over an in-process budget state: asks the engine and turns its decision into a 429 or warning headers, in one step. */
export function budgetGate(engine: BudgetEngine, runaway?: Runaway): CallGate {
  return {
    admit(ctx: CallContext): Admission {
      const now = Date.now()
      const events = guard(ctx, runaway, now)
      if (!(events instanceof Later) && !Array.isArray(events)) return events
      return admission(failing(events, () => engine.admit(ctx, now)), ctx, events, now, runaway)
    },
  }
}

/**
 * The gate over a shared budget state (PostgreSQL): the same, but a call under a `block` rule
 * waits for its reservation in the database (`pending`); every other call is decided in one step.
 */
export function sharedBudgetGate(engine: BudgetEngine, runaway?: Runaway): CallGate {
  return {
    admit(ctx: CallContext): Admission {
      const now = Date.now()
      const events = guard(ctx, runaway, now)
      if (!(events instanceof Later) && !Array.isArray(events)) return events
      const d = failing(events, () => engine.decide(ctx, now))
      if (!(d instanceof Promise)) return admission(d, ctx, events, now, runaway)
      return {
        pending: d.then(
          (x) => admission(x, ctx, events, Date.now(), runaway),
          (err: unknown) => {
            if (events instanceof Later) events.events()
            throw err
          },
        ),
      }
    },
  }
}

/** `decide()`; when it throws (the gate fails, the call is not sent), a deferred runaway check runs first, as it would have on arrival. */
function failing<T>(runaway: RunawayEvent[] | Later, decide: () => T): T {
  try {
    return decide()
  } catch (err) {
    if (runaway instanceof Later) runaway.events()
    throw err
  }
}

/**
 * A runaway check that cannot refuse the call (no `block` action), run after the call has gone
 * upstream (RunawayDetector.defer): queued by `Admission.afterSend`, or run when the response's
 * headers are written (`Admission.lateHeaders`) or when the call is refused, whichever comes first.
 */
class Later {
  constructor(readonly check: DeferredCheck) {}
  /** The check's events, running it now if it has not run yet. */
  events(): RunawayEvent[] {
    return this.check.events()
  }
  /** The warning header, computed when asked. */
  headers = (): Record<string, string> | undefined => {
    const events = this.check.events()
    return events.length ? { [RUNAWAY_HEADER]: events.map(runawayText).join(', ') } : undefined
  }
  soon = (): void => this.check.soon()
}

/**
 * Runaway checks and subscription calls, before money: the answer when they decide the call, else
 * the runaway events to report (a `Later` when the check cannot refuse: it runs after the dispatch).
 */
function guard(ctx: CallContext, runaway: Runaway | undefined, now: number): RunawayEvent[] | Later | Admission {
  if (runaway?.detector.deferrable && runaway.detector.enabled) {
    const later = new Later(runaway.detector.defer(ctx, now))
    if (ctx.billing === 'subscription') return { lateHeaders: later.headers, afterSend: later.soon }
    return later
  }
  // A stuck agent burns a plan's window as surely as money: loops are caught on every call.
  const events = runaway ? runaway.detector.check(ctx, now) : NO_EVENTS
  if (events[0]?.action === 'block') {
    if (events[0].kind !== 'loop') runaway!.detector.refused(ctx)
    return runawayRefusal(events[0], runaway!.windowMinutes, runaway!.usdPerMinute)
  }
  // Money budgets leave plan usage alone (no money per token): the hook for a rule that opts in.
  if (ctx.billing === 'subscription') return events.length ? { headers: { [RUNAWAY_HEADER]: events.map(runawayText).join(', ') } } : {}
  return events
}

const NO_EVENTS: RunawayEvent[] = []

function admission(d: Decision, ctx: CallContext, runaway: RunawayEvent[] | Later, now: number, guarded?: Runaway): Admission {
  let headers: Record<string, string> | undefined = d.warnings.length ? { [WARNING_HEADER]: d.warnings.map(warningOf).join(', ') } : undefined
  if (!d.refuse && runaway instanceof Later) return { headers, settle: d.settle, unsent: d.unsent, lateHeaders: runaway.headers, afterSend: runaway.soon }
  // A refusal carries the runaway warning too: a deferred check runs now.
  const events = runaway instanceof Later ? runaway.events() : runaway
  if (events.length) headers = { ...headers, [RUNAWAY_HEADER]: events.map(runawayText).join(', ') }
  if (!d.refuse) return d.settle || headers ? { headers, settle: d.settle, unsent: d.unsent } : {}
  // Refused: not a loop turn (its check has run, above).
  guarded?.detector.refused(ctx)
  const r = d.refuse
  if (r.kind === 'rate' && r.rate) {
    const rate = r.rate
    return {
      refuse: {
        status: 429,
        headers: { ...headers, 'x-should-retry': 'true', 'retry-after': retryAfter(rate.retryAt, now) },
        body: errorBody(
          'rate_limited',
          `Budget rule "${shownPattern(r.rule.api_key_pattern)}" (${r.rule.source}) allows ${rate.limit} ${rate.kind} per minute and the last minute used ${rate.used}; retry after ${new Date(rate.retryAt).toISOString()}.`,
          {
            api_key_pattern: shownPattern(r.rule.api_key_pattern),
            period: 'rate',
            limit: rate.limit,
            used: rate.used,
            unit: rate.kind === 'requests' ? 'requests_per_minute' : 'tokens_per_minute',
            resets_at: new Date(rate.retryAt).toISOString(),
          },
        ),
        reason: RATE_REASON,
        rule: shownPattern(r.rule.api_key_pattern),
      },
    }
  }
  const p = r.state as PeriodState
  // Refused only for the calls still in flight (spend under the limit; a worst case that fits once
  // they end): a moment later they may have ended, so the client is told to retry soon, not at
  // the period's reset (an agent would stop for the day at a fraction of its budget). "Fits" is
  // admission's own test (./reached.ts), or a call refused again is told to retry in seconds.
  const transient = !reached(p.spent, p.limit) && (r.kind === 'reserved' || (r.kind === 'worst_case' && r.reservedUsd > 0 && r.worstCaseUsd <= reachedAt(p.limit) - p.spent))
  const refuseHeaders: Record<string, string> = { ...headers, 'x-should-retry': transient ? 'true' : 'false' }
  if (transient) refuseHeaders['retry-after'] = String(IN_FLIGHT_RETRY_S)
  else if (p.resetsAt !== null) refuseHeaders['retry-after'] = retryAfter(p.resetsAt, now)
  return {
    refuse: {
      status: 429,
      headers: refuseHeaders,
      body: errorBody('budget_exceeded', refusalMessage({ ...r, state: p }, ctx.keyHint, ctx.session, ctx.shape.expectedUsd !== undefined), {
        api_key_pattern: shownPattern(r.rule.api_key_pattern),
        period: p.period,
        limit_usd: p.limit,
        spent_usd: p.spent,
        resets_at: p.resetsAt === null ? null : new Date(p.resetsAt).toISOString(),
      }),
      reason: REFUSAL_REASON,
      rule: shownPattern(r.rule.api_key_pattern),
      limitReached: reached(p.spent, p.limit),
    },
  }
}
