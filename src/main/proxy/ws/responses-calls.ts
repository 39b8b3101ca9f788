import { performance } from 'node:perf_hooks'
import type { IncomingHttpHeaders } from 'node:http'
import { errorBody } from '../../http/errors'
import type { Attributors } from '../call/context'
import type { HeadersObserver } from '../call/forward'
import type { CallLifecycle } from '../call/lifecycle'
import type { CallState } from '../call/state'
import type { Route } from '../routes'
import type { Admission } from '../gate'
import { TERMINAL, errorFrame, errorStatus, frameType, laneOfFrame, responseIdOf, steerFailedFrame } from './frames'
import { CallSettings } from './call-settings'
import { OpenCalls } from './open-calls'
import { PlanHeaders } from './plan-headers'
import { type ClosedBy, SocketEnd, abandoned, releaseSteer } from './socket-end'
import { SocketSteers } from './steers'

/**
 * The calls on one Responses WebSocket (`GET /v1/responses` upgraded): each `response.create`
 * the client sends is one call, admitted by the gate like any HTTP call, metered from the frames
 * that follow and recorded at its `response.completed` (or `.failed`, `.incomplete`, or an `error`
 * before the response began). Responses in one lane are sequential, so an upstream frame belongs
 * to the oldest open call of its lane: a socket's one lane, or with OpenAI's multiplexing the
 * `stream_id` the frame echoes from its `response.create`.
 *
 * A response can also begin with no `response.create`: a `response.steer` (input queued for the
 * running response) makes the server finish that response and start a successor with the same
 * settings by itself. The steer is gated as a call of those settings, and the successor recorded
 * as that call; one no steer here asked for is recorded as the lane's last `response.create`.
 */
export class ResponsesSocketCalls {
  /** The open calls, in their lanes (./open-calls.ts). */
  private readonly open = new OpenCalls()
  /** What each lane's responses are asked with, and the call each begins as (./call-settings.ts). */
  private readonly settings: CallSettings
  /** Steers admitted whose successor has not begun (./steers.ts). */
  private readonly steers: SocketSteers
  /** The socket's end, for the calls still open then (./socket-end.ts). */
  private readonly end: SocketEnd
  /** What the socket says of the plan's windows, shown to `observe` (./plan-headers.ts). */
  private readonly plan: PlanHeaders

  constructor(
    private readonly life: CallLifecycle,
    route: Route,
    headers: IncomingHttpHeaders,
    who: Attributors,
    observe?: HeadersObserver,
    /** The upstream's upgrade answer headers, shown to `observe` with the first call (it needs the call's credential). */
    upgradeHeaders: IncomingHttpHeaders | null = null,
  ) {
    this.steers = new SocketSteers((s) => releaseSteer(life, s))
    this.end = new SocketEnd(this.open, this.steers, life)
    this.settings = new CallSettings(life, route, headers, who)
    this.plan = new PlanHeaders(observe, upgradeHeaders)
  }

  /**
   * A text frame from the client. Returns null to forward it, the error frame to answer instead
   * (a budget refusal: the frame is not sent upstream), or false to drop it (the socket closed
   * while its admission waited). A binary frame (`binary`) that is not JSON after all is passed on.
   */
  fromClient(data: Buffer, binary = false): string | null | false | Promise<string | null | false> {
    // Parsed whole: the client's frames are few, and its top-level `type` may come after other
    // keys whose values hold a "type" of their own (an input item's). A frame is at most the
    // socket's maxPayload (the request body limit), so this costs what parsing an HTTP body does.
    let frame: any
    try {
      frame = JSON.parse(data.toString('utf8'))
    } catch {
      if (binary) return null
      // What Burnrate cannot read, the budgets cannot check: refused rather than passed on.
      return errorFrame(400, errorBody('invalid_request', 'Burnrate could not read this frame as JSON; it was not sent upstream.'), {})
    }
    if (frame === null || typeof frame !== 'object') return null
    const steer = frame.type === 'response.steer'
    if (frame.type !== 'response.create' && !steer) return null
    let lane = typeof frame.stream_id === 'string' ? frame.stream_id : ''
    if (lane) this.open.lanes = true
    let body: Record<string, unknown> = frame
    if (steer) {
      if (!lane && typeof frame.previous_response_id === 'string') lane = this.settings.laneOfResponse(frame.previous_response_id) ?? ''
      // Its input goes to a successor the server starts with the settings of the response it
      // continues: gated (and, once the successor begins, recorded) as a call of those settings.
      body = this.settings.steered(lane, frame)
    } else this.settings.created(lane, frame)
    const started = performance.now()
    const ts = Date.now()
    const s = this.settings.begin(body, data.length, ts, started)
    this.open.setLane(s, lane)
    if (steer) this.steers.mark(s, { previous_response_id: frame.previous_response_id, input: frame.input })
    let a: Admission | Promise<Admission>
    try {
      a = this.life.admit(s)
    } catch {
      return this.failed(s)
    }
    // A promise only on shared budget state: the relay holds the client's next frames meanwhile.
    if (a instanceof Promise) return a.then((x) => this.admitted(s, x), () => this.failed(s))
    return this.admitted(s, a)
  }

  private failed(s: CallState): string {
    return this.refused(s, {
      status: 500,
      body: errorBody('internal', 'Burnrate could not check the budget for this call; it was not sent upstream.'),
      reason: 'gate_failed',
    })
  }

  private refused(s: CallState, refusal: { status: number; body: unknown; headers?: Record<string, string>; reason: string }): string {
    s.status = refusal.status
    s.error = refusal.reason
    this.life.finish(s)
    const steer = this.steers.unmark(s)
    if (steer) {
      // Not an `error` in the lane of the response it steers: that response goes on.
      return steerFailedFrame(refusal.status, refusal.body, refusal.headers ?? {}, steer, this.open.lane(s))
    }
    return errorFrame(refusal.status, refusal.body, refusal.headers ?? {}, this.open.lane(s))
  }

  private admitted(s: CallState, a: Admission): string | null | false {
    if (a.refuse) {
      s.admission = { settle: a.settle }
      return this.refused(s, { ...a.refuse })
    }
    // The socket closed while the admission waited (on PostgreSQL): closed() found nothing open,
    // so the call is recorded here as closed() would have, at $0, which frees its reservation.
    if (this.end.closedBy) {
      // A steer is not sent: nothing to record, as for one still queued at the close.
      if (this.steers.is(s)) {
        this.steers.drop(s)
        return false
      }
      abandoned(s, this.end.closedBy)
      this.life.finish(s)
      return false
    }
    const { ctx, info } = s
    s.status = 200
    s.upstreamStatus = 200
    s.meter = ctx.provider.meter(ctx.shape, info)
    if (this.steers.is(s)) this.steers.queue(s, this.open.lane(s) ?? '')
    else this.open.push(s)
    // The frame goes upstream when this returns; what the gate left for after that runs then.
    a.afterSend?.()
    this.plan.admitted(s)
    return null
  }

  /** A JSON frame from the upstream, on its way to the client. */
  fromUpstream(data: Buffer): void {
    const text = data.toString('utf8')
    const type = frameType(text)
    // One lane (null): every open call is in it. Else the frame's, or, from an upstream that does
    // not echo lanes, the oldest open call's.
    const named = this.open.lanes ? laneOfFrame(text) : null
    let s = this.open.oldest(named)
    // An erred call's response may end without its terminal event. While no other response was
    // asked for in its lane, every frame is still its own; once one was, a frame other than a
    // terminal event is the next response's: the erred call ends there, with what it had.
    if (s && this.open.erred.has(s) && !TERMINAL.has(type)) {
      const next = this.open.next(s)
      if (next) {
        this.open.remove(s)
        this.life.finish(s)
        s = next
      }
    }
    if (type === 'response.created') {
      // A response no `response.create` waits for (none open in its lane), or one that steered
      // input queued here began: a successor the server started by itself.
      const steered = this.steeredLane(named)
      if (!s || this.steers.waiting(steered)) s = this.successor(steered) ?? s
      const id = this.open.lanes ? responseIdOf(text) : null
      // The lane of the call it is (a steer naming the response finds its settings there).
      if (id && s) this.settings.began(id, this.open.lane(s) ?? '')
    } else if (type === 'response.steer.failed' || type === 'response.steer.pending') {
      // The steered input was refused, or waits for a `response.create` of the client's (gated
      // itself): no successor will take its steer.
      this.steers.dropOldest(this.steeredLane(named))
    }
    if (!s) return
    s.responseStarted = true
    if (type === 'codex.rate_limits' || type === 'error') this.plan.frame(s, type, text)
    try {
      s.meter?.event(type, text)
    } catch {
      // A frame we cannot read never stops the relay.
    }
    if (TERMINAL.has(type)) {
      this.open.remove(s)
      this.life.finish(s)
    } else if (type === 'error') {
      // After the response began: the meter noted the error's code (the call's error, its status
      // stays the upstream's 200, as over HTTP); the call waits for the response's terminal event.
      if (this.open.begun.has(s)) {
        this.open.erred.add(s)
        return
      }
      // Refused before any of the response (a 429, a prompt too long): nothing was generated, so
      // it costs $0, as an HTTP call's error answer does, not an estimate of its prompt.
      this.open.remove(s)
      const status = errorStatus(text)
      s.status = status
      s.error = 'upstream_error'
      s.upstreamStatus = status
      s.meter = undefined
      this.life.finish(s)
    } else if (type.startsWith('response.')) {
      this.open.begun.add(s)
    }
  }

  /** The lane of a steer's events and its successor: the one the frame names, else (an upstream that does not echo lanes) the oldest steer's. */
  private steeredLane(named: string | null): string {
    return named ?? this.steers.firstLane() ?? ''
  }

  /**
   * The call a successor response in `lane` is: the oldest steer queued there (every other one
   * queued meanwhile went into the same successor: their reservations are freed), else one made
   * from the lane's last `response.create`, whose settings the successor inherits (recorded, not
   * gated: the server started it). It goes first in its lane: the frames that follow are its.
   */
  private successor(lane: string): CallState | undefined {
    let s = this.steers.take(lane)
    if (!s) {
      s = this.settings.successor(lane)
      if (!s) return undefined
      this.open.setLane(s, lane)
    }
    this.open.first(s, lane)
    return s
  }

  /**
   * Whether a response is open: `waiting` for its first frame, or `streaming`. An erred call is
   * not: the agent has its error and its turn is over, so the socket is between turns even while
   * the call waits for a terminal event that may never come.
   */
  openState(): 'none' | 'waiting' | 'streaming' {
    const s = this.open.firstUnerred()
    if (s) return s.responseStarted ? 'streaming' : 'waiting'
    // A steer queued, its response ended: the server owes its successor (or its failure).
    return this.steers.firstLane() !== undefined ? 'waiting' : 'none'
  }

  /** The upstream went silent past its time limit: the open calls are recorded as timed out (./socket-end.ts). */
  timedOut(): void {
    this.end.timedOut()
  }

  /** The socket closed: calls still open are recorded as abandoned by the client or cut by the upstream (./socket-end.ts). */
  closed(by: ClosedBy): void {
    this.end.closed(by)
  }
}
