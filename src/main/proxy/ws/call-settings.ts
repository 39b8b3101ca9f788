import { performance } from 'node:perf_hooks'
import type { IncomingHttpHeaders } from 'node:http'
import type { Attributors } from '../call/context'
import { describeCall } from '../call/context'
import type { CallLifecycle } from '../call/lifecycle'
import { type CallState, newCallState } from '../call/state'
import type { Route } from '../routes'
import { MAX_LANE_CHARS } from './frames'
import { LaneSettings, settingsOf } from './lane-settings'
import { isObject, parseObject } from '../../metering/usage'

/** How many responses' lanes a socket keeps (a steer names a recent response). */
const MAX_RESPONSES_KEPT = 256

/**
 * What the responses on one Responses socket are asked with, and the call each begins as: per
 * lane the last `response.create` sent upstream (whose settings a steer, and a successor the
 * server starts by itself, inherit; bounded: ./lane-settings.ts), the lane each response began in
 * (a steer names the response it steers), and the socket's project (Codex states its working
 * directory in its first turn only).
 */
export class CallSettings {
  /** Per lane, the last `response.create` sent upstream: the settings a successor response inherits. */
  private readonly asked = new LaneSettings()
  /** Which lane each response began in (a steer names the response it steers, not always its lane). */
  private readonly responseLane = new Map<string, string>()
  /** The last project a response.create on this socket stated. */
  private project = ''

  constructor(
    private readonly life: CallLifecycle,
    private readonly route: Route,
    private readonly headers: IncomingHttpHeaders,
    private readonly who: Attributors,
  ) {}

  /** A client's `response.create` in `lane` (`bytes` long), sent upstream: its settings are the lane's from now on. */
  created(lane: string, frame: Record<string, unknown>, bytes: number): void {
    this.asked.set(lane, frame, bytes)
  }

  /**
   * What a `response.steer` in `lane` is gated (and, once its successor begins, recorded) as: a
   * call of the settings of the response it continues, with its input; the frame itself when the
   * lane has none.
   */
  steered(lane: string, frame: any): Record<string, unknown> {
    const asked = this.asked.get(lane)
    return asked ? { ...asked, input: frame.input, previous_response_id: frame.previous_response_id } : frame
  }

  /** The lane response `id` began in, if it is one of the recent ones. */
  laneOfResponse(id: string): string | undefined {
    return this.responseLane.get(id)
  }

  /** Response `id` began in `lane`. */
  began(id: string, lane: string): void {
    // (A lane longer than an upstream frame's is read back, ./frames.ts, is matched by none of its frames: not kept.)
    if (lane.length > MAX_LANE_CHARS) return
    this.responseLane.set(id, lane)
    // A long-lived socket's older responses are steered no more: the map stays small.
    if (this.responseLane.size > MAX_RESPONSES_KEPT) this.responseLane.delete(this.responseLane.keys().next().value!)
  }

  /** The call a client's frame (`body`, `bytes` long) begins, at `ts` (`started` on the monotonic clock). */
  begin(body: Record<string, unknown>, bytes: number, ts: number, started: number): CallState {
    const { info, ctx } = describeCall(this.route, 'POST', this.headers, body, bytes, ts, this.who)
    // Codex sends its later turns on a socket as what is new since the last response
    // (previous_response_id): the working directory its first turn stated is the socket's project.
    if (ctx.project) this.project = ctx.project
    else ctx.project = this.project
    const s = this.life.begin(newCallState(this.route, ctx, info, started))
    s.streamed = true
    return s
  }

  /**
   * The call of a successor response in `lane` that no steer here asked for (recorded, not gated:
   * the server started it), made from the lane's last `response.create`; if the lane has none kept
   * (none was sent in it, or it was let go: ./lane-settings.ts), from the settings the response's
   * own `response.created` (`created`, its frame's text) echoes, its model first: the call is
   * recorded all the same, its usage from its own events.
   */
  successor(lane: string, created: string): CallState {
    const asked = this.asked.get(lane) ?? echoed(created)
    const { info, ctx } = describeCall(this.route, 'POST', this.headers, asked, 0, Date.now(), this.who)
    if (!ctx.project) ctx.project = this.project
    const s = this.life.begin(newCallState(this.route, ctx, info, performance.now()))
    s.streamed = true
    s.status = 200
    s.upstreamStatus = 200
    s.meter = ctx.provider.meter(ctx.shape, info)
    return s
  }
}

/** The settings a response's `response.created` echoes (its `response` object's: model, tier, ...). */
function echoed(created: string): Record<string, unknown> {
  const r = parseObject(created)?.response
  return isObject(r) ? settingsOf(r) : {}
}
