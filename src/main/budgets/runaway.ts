import type { CallRecord } from '../ledger/record'
import { callEach } from '../ledger/listeners'
import type { CallContext } from '../proxy/gate'
import { AnswerSizes, type ContinuedTurn, continuedTail, continuesResponse } from './continued-tail'
import { tailOf } from './conversation-tail'

/**
 * Runaway agents (README: Runaway agents). An agent stuck in a loop sends the same request
 * again and again: the same model and the same end of the conversation (its last two messages:
 * the same tool call and the same tool result), while the conversation in front of it may grow.
 * A call whose model and tail hash were seen from the same session `repeats` times within
 * `windowMinutes` is a loop. A normal session's tail changes with every turn, so it never is; a
 * resend of the same request (its conversation no longer than at the tail's last turn) is no turn.
 * Separately, a session whose calls cost more than `usdPerMinute` in the last minute trips the
 * spend-rate alarm.
 */

export type RunawayAction = 'off' | 'warn' | 'block'

export interface RunawayOptions {
  loop: { action: RunawayAction; repeats: number; windowMinutes: number }
  spendRate: { action: RunawayAction; usdPerMinute: number | null }
}

export interface RunawayEvent {
  kind: 'loop' | 'spend_rate'
  action: 'warn' | 'block'
  session: string
  agent: string
  model: string
  api_key_hash: string
  key_hint: string
  /** loop: how many times the tail was seen in the window (this call included). */
  count: number
  /** spend_rate: USD spent by the session in the last minute. */
  usd_last_minute: number
  at: number
}

const MINUTE = 60_000
/** Sessions remembered at once; the least recently used are forgotten beyond it. */
const MAX_SESSIONS = 10_000

/** A call counted as a turn of a tail: when it arrived, and how many messages its conversation had. */
interface Turn {
  t: number
  length: number
}

interface SessionState {
  /** Last time the session was seen (sessions quiet longer than every window are forgotten). */
  last: number
  /** tail key -> the turns counted within the window, oldest first. */
  tails: Map<string, Turn[]>
  /** Costs of the last minute. */
  spend: { t: number; usd: number }[]
  /** Last time each kind was announced (once per window). */
  announced: Map<string, number>
  /** The session's last turn continuing a stored response (./continued-tail.ts). */
  continued?: ContinuedTurn
}

/** A call's runaway check waiting to run (RunawayDetector.defer). */
export interface DeferredCheck {
  /** What the check trips: runs it now (and the checks of earlier calls first) when it has not run yet. */
  events(): RunawayEvent[]
  /** Runs it on an immediate queued now, unless it has run by then. */
  soon(): void
}

/** A call's check, waiting or run: one object per call, its own DeferredCheck (no closures made per call). */
class Waiting implements DeferredCheck {
  result: RunawayEvent[] | null = null
  /** `soon` has queued its immediate. */
  queued = false

  constructor(
    readonly ctx: CallContext,
    readonly now: number,
    /** The detector's `settle`. */
    private readonly settle: (until: Waiting) => RunawayEvent[],
  ) {}

  events(): RunawayEvent[] {
    return this.result ?? this.settle(this)
  }

  soon(): void {
    if (this.result || this.queued) return
    this.queued = true
    setImmediate(settleWaiting, this)
  }
}

function settleWaiting(p: Waiting): void {
  if (!p.result) p.events()
}

const NOTHING_DEFERRED: DeferredCheck = { events: () => [], soon: () => {} }
/** A check that trips nothing (every reader only reads it). */
const NO_EVENTS: RunawayEvent[] = []

function runawayEvent(ctx: CallContext, at: number, kind: RunawayEvent['kind'], action: RunawayEvent['action'], count: number, usd: number): RunawayEvent {
  return { session: ctx.session, agent: ctx.agent, model: ctx.shape.model, api_key_hash: ctx.apiKeyHash, key_hint: ctx.keyHint, at, kind, action, count, usd_last_minute: usd }
}

export class RunawayDetector {
  private readonly sessions = new Map<string, SessionState>()
  private readonly listeners = new Set<(e: RunawayEvent) => void>()
  private readonly recent: RunawayEvent[] = []
  /** The size of each recent Responses answer, for the turns that continue it (./continued-tail.ts). */
  private readonly answers = new AnswerSizes()

  constructor(private readonly opts: RunawayOptions) {}

  get enabled(): boolean {
    return this.opts.loop.action !== 'off' || (this.opts.spendRate.action !== 'off' && this.opts.spendRate.usdPerMinute !== null)
  }

  /** How long a quiet session can still matter: the loop window, or the spend rate's minute. */
  private get horizon(): number {
    return Math.max(this.opts.loop.windowMinutes * MINUTE, MINUTE)
  }

  /**
   * A session's state, most recently used last. State is made only for a session that has
   * something to remember (a conversation tail, a cost), and sessions quiet for longer than every
   * window are forgotten as new ones arrive, so one-shot calls and finished sessions hold nothing.
   */
  private session(key: string, create: boolean, now: number): SessionState | undefined {
    let s = this.sessions.get(key)
    if (s) {
      this.sessions.delete(key)
      this.sessions.set(key, s)
      s.last = now
    } else if (create) {
      for (const [k, old] of this.sessions) {
        if (old.last > now - this.horizon && this.sessions.size < MAX_SESSIONS) break
        this.sessions.delete(k)
      }
      s = { last: now, tails: new Map(), spend: [], announced: new Map() }
      this.sessions.set(key, s)
    }
    return s
  }

  /**
   * True when no check can refuse a call (neither action is `block`, or the spend rate's has no
   * limit): a check then only adds a warning header and announces events, so it can wait until
   * the call has gone upstream (`defer`).
   */
  get deferrable(): boolean {
    return this.opts.loop.action !== 'block' && !(this.opts.spendRate.action === 'block' && this.opts.spendRate.usdPerMinute !== null)
  }

  /** Checks a call before it goes upstream; returns what it trips (the first blocking one first). */
  check(ctx: CallContext, now = Date.now()): RunawayEvent[] {
    if (!this.enabled || !ctx.session) return []
    this.settle()
    return this.evaluate(ctx, now)
  }

  /**
   * The check of a call that arrived at `now`, run later: on an immediate queued once the call
   * has been handed upstream (`soon`; undici writes a request on a kept-alive connection in an
   * immediate of its own, queued by the dispatch, so this one runs after that write), or at once
   * when its answer is wanted sooner (`events`: the response's headers are about to be written,
   * the call is refused). Checks run exactly once each, in the order the calls arrived, with
   * their arrival time; every reader and writer of the state (`check`, `observe`, `events`) runs
   * the waiting ones first, so each sees the state it would have seen on arrival and the counts,
   * events and announcements are those of a check at arrival. A check that throws (a tail nested
   * too deep for JSON.stringify) trips nothing: the call is already on its way.
   */
  defer(ctx: CallContext, now = Date.now()): DeferredCheck {
    if (!this.enabled || !ctx.session) return NOTHING_DEFERRED
    const p = new Waiting(ctx, now, this.settleFor)
    this.waiting[this.waitingTo++] = p
    return p
  }

  /**
   * Calls whose check waits (`defer`), oldest first, from `waitingFrom` (the next to run: those
   * before it are done and let go) to before `waitingTo`. The list is kept, not made afresh, when
   * it empties (a new one would be made again for the next call), unless a burst made it long.
   */
  private waiting: (Waiting | null)[] = []
  private waitingFrom = 0
  private waitingTo = 0
  private readonly settleFor = (until: Waiting): RunawayEvent[] => this.settle(until)
  /** What each waiting check's immediate runs (`Waiting.soon`; test/budgets/runaway-deferred.test.ts holds them back by it). */
  private readonly settleUntil = settleWaiting

  /** Runs the waiting checks in arrival order, up to `until` (all of them without it); returns `until`'s events. */
  private settle(until?: Waiting): RunawayEvent[] {
    while (this.waitingFrom < this.waitingTo) {
      const p = this.waiting[this.waitingFrom]!
      // Let go of the call (its body) as it is taken; the list starts afresh when it is done, or
      // is compacted when calls keep arriving before it is.
      this.waiting[this.waitingFrom++] = null
      if (this.waitingFrom === this.waitingTo) {
        this.waitingFrom = this.waitingTo = 0
        if (this.waiting.length > 1024) this.waiting = []
      } else if (this.waitingFrom >= 1024 && this.waitingFrom * 2 >= this.waitingTo) {
        this.waiting.splice(0, this.waitingFrom)
        this.waitingTo -= this.waitingFrom
        this.waitingFrom = 0
      }
      try {
        p.result = this.evaluate(p.ctx, p.now)
      } catch {
        p.result = NO_EVENTS
      }
      if (p === until) break
    }
    return until?.result ?? []
  }

  /** What a call trips; nothing (the shared empty list, read only) for nearly every call, with no event's fields built for it. */
  private evaluate(ctx: CallContext, now: number): RunawayEvent[] {
    let out: RunawayEvent[] | null = null
    const key = `${ctx.apiKeyHash}\n${ctx.session}`
    const loop = this.opts.loop
    if (loop.action !== 'off') {
      // A turn continuing a stored response holds only what is new: its tail follows the session's turn before it.
      const continued = continuesResponse(ctx.body) ? continuedTail(ctx.body, this.session(key, false, now)?.continued, this.answers.of) : null
      const tail = continued ?? tailOf(ctx.body)
      if (tail) {
        const s = this.session(key, true, now)!
        if (continued) s.continued = continued.turn
        const window = loop.windowMinutes * MINUTE
        for (const [k, turns] of s.tails) {
          while (turns.length && turns[0].t <= now - window) turns.shift()
          if (turns.length === 0) s.tails.delete(k)
        }
        const k = `${ctx.shape.model}\n${tail.hash}`
        const turns = s.tails.get(k) ?? []
        // A loop's conversation grows with every turn. One that has not grown since this tail was
        // last counted is the same request sent again (an SDK's retry after a 529 or 429): not a
        // turn, though a loop already found is still one.
        if (turns.at(-1)?.length !== tail.length) {
          const turn = { t: now, length: tail.length }
          turns.push(turn)
          this.counted.set(ctx, { turns, turn })
        }
        s.tails.set(k, turns)
        if (turns.length >= loop.repeats) {
          const e = runawayEvent(ctx, now, 'loop', loop.action, turns.length, 0)
          out = [e]
          this.announce(s, e, now)
        }
      }
    }
    const rate = this.opts.spendRate
    const s = rate.action !== 'off' && rate.usdPerMinute !== null ? this.session(key, false, now) : undefined
    if (s && rate.usdPerMinute !== null) {
      while (s.spend.length && s.spend[0].t <= now - MINUTE) s.spend.shift()
      const usd = s.spend.reduce((a, x) => a + x.usd, 0)
      if (usd > rate.usdPerMinute) {
        const e = runawayEvent(ctx, now, 'spend_rate', rate.action as 'warn' | 'block', 0, usd)
        if (out) out.push(e)
        else out = [e]
        this.announce(s, e, now)
      }
    }
    if (!out) return NO_EVENTS
    return out.length > 1 ? out.sort((a, b) => (a.action === b.action ? 0 : a.action === 'block' ? -1 : 1)) : out
  }

  /** The turn each call was counted as, until the call is let go (`refused` takes it back). */
  private readonly counted = new WeakMap<CallContext, { turns: Turn[]; turn: Turn }>()

  /**
   * Takes back the loop turn of a call Burnrate refused for something else (a budget, a rate limit,
   * the spend rate): the call did nothing, so neither it nor the retries it was told to make are a
   * loop. A call refused as a loop keeps its turn: sent again, it is refused again.
   */
  refused(ctx: CallContext): void {
    this.settle()
    const c = this.counted.get(ctx)
    if (!c) return
    this.counted.delete(ctx)
    const i = c.turns.lastIndexOf(c.turn)
    if (i >= 0) c.turns.splice(i, 1)
  }

  /** Counts a recorded call's cost for its session's spend rate (and keeps a Responses answer's size). */
  observe(call: CallRecord, now = Date.now()): void {
    if (call.response_id && call.endpoint === 'responses' && this.opts.loop.action !== 'off') this.answers.remember(call.response_id, call.output_tokens, call.reasoning_tokens)
    const rate = this.opts.spendRate
    if (!call.session || !(call.cost_usd > 0) || rate.action === 'off' || rate.usdPerMinute === null) return
    // A plan's (subscription) call costs no money: its cost_usd is an API-equivalent value.
    if (call.billing === 'subscription') return
    this.settle()
    const s = this.session(`${call.api_key_hash}\n${call.session}`, true, now)!
    // Only the last minute counts: a session that is never checked (no tail) keeps no more than that.
    while (s.spend.length && s.spend[0].t <= now - MINUTE) s.spend.shift()
    s.spend.push({ t: now, usd: call.cost_usd })
  }

  /** Tells listeners once per session, kind and window (a loop: its window; the spend rate: a minute). */
  private announce(s: SessionState, e: RunawayEvent, now: number): void {
    const quiet = e.kind === 'loop' ? this.opts.loop.windowMinutes * MINUTE : MINUTE
    const last = s.announced.get(e.kind)
    if (last !== undefined && now - last < quiet) return
    s.announced.set(e.kind, now)
    this.recent.push(e)
    if (this.recent.length > 200) this.recent.shift()
    callEach(this.listeners, e)
  }

  onEvent(listener: (e: RunawayEvent) => void): () => void {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }

  /** The last 200 announced events, newest first (the dashboard's marks). */
  events(): RunawayEvent[] {
    this.settle()
    return [...this.recent].reverse()
  }
}
