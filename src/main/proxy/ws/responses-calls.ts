import type { IncomingHttpHeaders } from 'node:http'
import type { Attributors } from '../call/context'
import type { HeadersObserver } from '../call/forward'
import type { CallLifecycle } from '../call/lifecycle'
import type { CallState } from '../call/state'
import type { Route } from '../routes'
import { TERMINAL, errorStatus, frameType, laneOfFrame, responseIdOf } from './frames'
import { CallSettings } from './call-settings'
import { ClientFrames } from './client-frames'
import { OpenCalls } from './open-calls'
import { PlanHeaders } from './plan-headers'
import { type ClosedBy, SocketEnd, releaseSteer } from './socket-end'
import { SocketSteers } from './steers'
import type { SocketCalls } from './socket-calls'

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
 * as that call; one no steer here asked for is recorded as the lane's last `response.create` (or,
 * the lane's no longer kept, as what its `response.created` echoes: ./call-settings.ts).
 *
 * Here: the upstream's frames, each metered for the call it belongs to and that call recorded at
 * its end. The client's frames and their admission are ./client-frames.ts; the open calls and
 * their lanes ./open-calls.ts; what calls are asked with ./call-settings.ts; the socket's end for
 * its calls ./socket-end.ts.
 */
export class ResponsesSocketCalls implements SocketCalls {
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
  /** The client's frames, each response it asks for begun as a call and gated (./client-frames.ts). */
  private readonly client: ClientFrames
  /** Ends the wait of erred calls for their terminal event after `erredWaitMs` of the upstream's quiet. */
  private erredTimer: NodeJS.Timeout | null = null

  constructor(
    private readonly life: CallLifecycle,
    route: Route,
    headers: IncomingHttpHeaders,
    who: Attributors,
    observe?: HeadersObserver,
    /** The upstream's upgrade answer headers, shown to `observe` with the first call (it needs the call's credential). */
    upgradeHeaders: IncomingHttpHeaders | null = null,
    /**
     * How long an erred call waits for its terminal event after the upstream's last frame
     * (`upstream.idle_timeout_ms`); null: until the next response or the socket's close.
     */
    private readonly erredWaitMs: number | null = null,
  ) {
    this.steers = new SocketSteers((s) => releaseSteer(life, s))
    this.end = new SocketEnd(this.open, this.steers, life)
    this.settings = new CallSettings(life, route, headers, who)
    this.plan = new PlanHeaders(observe, upgradeHeaders)
    this.client = new ClientFrames(life, this.open, this.settings, this.steers, this.plan, this.end)
  }

  /**
   * A text frame from the client (./client-frames.ts). Returns null to forward it, the error frame
   * to answer instead (a budget refusal: the frame is not sent upstream), or false to drop it (the
   * socket closed while its admission waited).
   */
  fromClient(data: Buffer, binary = false): string | null | false | Promise<string | null | false> {
    return this.client.fromClient(data, binary)
  }

  /** A JSON frame from the upstream, on its way to the client. */
  fromUpstream(data: Buffer): void {
    this.meterFrame(data)
    this.watchErred()
  }

  /**
   * An erred call's turn is over for the agent, but its call (and its budget reservation) stays
   * open for the terminal event OpenAI sends after the error. On a socket left open between turns
   * (Codex keeps it for the session) with no such event, it is recorded as it stands once the
   * upstream has been quiet for `erredWaitMs`, as a stream stalled that long over HTTP would be:
   * left open, it held its reservation for as long as the socket, refusing the key's other calls.
   */
  private watchErred(): void {
    if (this.erredWaitMs === null) return
    if (!this.open.anyErred()) return this.stopErred()
    if (this.erredTimer) this.erredTimer.refresh()
    else {
      this.erredTimer = setTimeout(this.endErred, this.erredWaitMs)
      this.erredTimer.unref()
    }
  }

  private readonly endErred = (): void => {
    this.erredTimer = null
    for (const s of this.open.takeErred()) this.life.finish(s)
  }

  private stopErred(): void {
    if (this.erredTimer) clearTimeout(this.erredTimer)
    this.erredTimer = null
  }

  /** Meters one upstream frame for the call it belongs to, and records that call at its end. */
  private meterFrame(data: Buffer): void {
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
      if (!s || this.steers.waiting(steered)) s = this.successor(steered, text)
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
   * The call a successor response in `lane` is (`created`: its `response.created`): the oldest
   * steer queued there (every other one queued meanwhile went into the same successor: their
   * reservations are freed), else one made from the lane's last `response.create`, whose settings
   * the successor inherits, or from what its `response.created` echoes (recorded, not gated: the
   * server started it). It goes first in its lane: the frames that follow are its.
   */
  private successor(lane: string, created: string): CallState {
    let s = this.steers.take(lane)
    if (!s) {
      s = this.settings.successor(lane, created)
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
    this.stopErred()
    this.end.timedOut()
  }

  /** The socket closed: calls still open are recorded as abandoned by the client or cut by the upstream (./socket-end.ts). */
  closed(by: ClosedBy): void {
    this.stopErred()
    this.end.closed(by)
  }
}
