import { performance } from 'node:perf_hooks'
import { errorBody } from '../../http/errors'
import type { CallLifecycle } from '../call/lifecycle'
import type { CallState } from '../call/state'
import type { Admission } from '../gate'
import type { CallSettings } from './call-settings'
import { duplicatedKey, duplicatedKeyMessage } from './duplicate-keys'
import { errorFrame, refusalFrame, steerFailedFrame } from './frames'
import type { OpenCalls } from './open-calls'
import type { PlanHeaders } from './plan-headers'
import { type SocketEnd, abandoned } from './socket-end'
import type { SocketSteers } from './steers'

/**
 * The client's side of a Responses socket: each frame read whole, and one that asks for a
 * response (`response.create`, or `response.steer`: input for a successor of the running
 * response) begun as a call and admitted by the gate like an HTTP call. Admitted, it is open in
 * its lane (a steer: queued for its successor) and its frame goes upstream; refused, it is
 * recorded and the client answered with the refusal, in the frame the socket reports errors in.
 */
export class ClientFrames {
  constructor(
    private readonly life: CallLifecycle,
    private readonly open: OpenCalls,
    private readonly settings: CallSettings,
    private readonly steers: SocketSteers,
    private readonly plan: PlanHeaders,
    private readonly end: SocketEnd,
  ) {}

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
    const text = data.toString('utf8')
    try {
      frame = JSON.parse(text)
    } catch {
      if (binary) return null
      // What Burnrate cannot read, the budgets cannot check: refused rather than passed on.
      return errorFrame(400, errorBody('invalid_request', 'Burnrate could not read this frame as JSON; it was not sent upstream.'), {})
    }
    if (frame === null || typeof frame !== 'object') return null
    // A key named twice: the upstream's parser may read the value JSON.parse did not (another
    // `type`, `model`, ...), so the budgets cannot know what it acts on. Refused, not passed on.
    const twice = duplicatedKey(text)
    if (twice !== null) return errorFrame(400, errorBody('invalid_request', duplicatedKeyMessage(twice)), {}, typeof frame.stream_id === 'string' ? frame.stream_id : '')
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
    }
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

  private refused(s: CallState, refusal: { status: number; body: unknown; headers?: Record<string, string>; reason: string; rule?: string }): string {
    s.status = refusal.status
    s.error = refusal.reason
    s.refusedRule = refusal.rule
    // A steer's refusal carries the status it was refused with; opencode's `error` frame may not.
    const sent = this.steers.is(s) ? undefined : refusalFrame(refusal.status, refusal.body, refusal.headers ?? {}, this.open.lane(s), s.ctx.client)
    // Recorded as the refusal it is; the metrics and the span show the status the client got.
    if (sent && sent.status !== refusal.status) s.clientStatus = sent.status
    this.life.finish(s)
    const steer = this.steers.unmark(s)
    if (steer) {
      // Not an `error` in the lane of the response it steers: that response goes on.
      return steerFailedFrame(refusal.status, refusal.body, refusal.headers ?? {}, steer, this.open.lane(s), s.ctx.client)
    }
    return sent?.frame ?? errorFrame(refusal.status, refusal.body, refusal.headers ?? {}, this.open.lane(s), s.ctx.client)
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
    const lane = this.open.lane(s) ?? ''
    if (this.steers.is(s)) this.steers.queue(s, lane)
    else {
      this.open.push(s)
      // Its settings are the lane's from now on (a refused frame, never sent, changes nothing upstream).
      this.settings.created(lane, s.ctx.body, s.ctx.bodyBytes)
    }
    // The frame goes upstream when this returns; what the gate left for after that runs then.
    a.afterSend?.()
    this.plan.admitted(s)
    return null
  }
}
