import { errorBody } from '../../http/errors'
import type { CallLifecycle } from '../call/lifecycle'
import type { CallState } from '../call/state'
import type { Admission } from '../gate'
import { duplicatedKey, duplicatedKeyMessage } from './duplicate-keys'
import { realtimeErrorFrame } from './realtime-frames'
import type { ClosedBy } from './socket-end'
import { abandoned } from './socket-end'

/** What the client's side needs of the socket's calls (./realtime-calls.ts). */
export interface RealtimeAsks {
  begin(): CallState
  admittedAs(s: CallState): void
  ask(s: CallState, eventId: string | null): void
  readonly closedBy: ClosedBy | null
}

/** The one client event that asks for a response; a frame that does not hold these bytes is not one... */
const CREATE = 'response.create'
/** ...unless it holds a JSON escape (`response\\u002ecreate` is the same type to the upstream's parser). Audio's base64 never does. */
const ESCAPE = '\\u'

/**
 * The client's side of a Realtime socket: a `response.create` is begun as a call and admitted by
 * the gate like an HTTP call (or a Responses socket's). Admitted, it goes upstream and waits for
 * its response; refused, it is recorded and the client answered with the refusal as an `error`
 * event, and the frame is not sent. Every other frame (audio appends, most of them, and the
 * conversation's items) passes unread: one is only parsed when its bytes hold `response.create`
 * or a JSON `\\u` escape (which may spell it).
 */
export class RealtimeClientFrames {
  constructor(
    private readonly life: CallLifecycle,
    private readonly calls: RealtimeAsks,
  ) {}

  fromClient(data: Buffer, binary: boolean): string | null | false | Promise<string | null | false> {
    if (!data.includes(CREATE) && !data.includes(ESCAPE)) return null
    let frame: any
    const text = data.toString('utf8')
    try {
      frame = JSON.parse(text)
    } catch {
      // (One that spells it only with an escape is no event to the upstream either.)
      if (binary || !data.includes(CREATE)) return null
      // What Burnrate cannot read, the budgets cannot check: refused rather than passed on.
      return realtimeErrorFrame(400, errorBody('invalid_request', 'Burnrate could not read this frame as JSON; it was not sent upstream.'), null)
    }
    if (frame === null || typeof frame !== 'object') return null
    const eventId = typeof frame.event_id === 'string' && frame.event_id ? frame.event_id : null
    // A key named twice (`type`: the upstream's parser may read its other value): refused, not passed on.
    const twice = duplicatedKey(text)
    if (twice !== null) return realtimeErrorFrame(400, errorBody('invalid_request', duplicatedKeyMessage(twice)), eventId)
    if (frame.type !== CREATE) return null
    const s = this.calls.begin()
    let a: Admission | Promise<Admission>
    try {
      a = this.life.admit(s)
    } catch {
      return this.failed(s, eventId)
    }
    // A promise only on shared budget state: the relay holds the client's next frames meanwhile.
    if (a instanceof Promise) return a.then((x) => this.admitted(s, x, eventId), () => this.failed(s, eventId))
    return this.admitted(s, a, eventId)
  }

  private failed(s: CallState, eventId: string | null): string {
    const body = errorBody('internal', 'Burnrate could not check the budget for this call; it was not sent upstream.')
    return this.refused(s, eventId, { status: 500, body, reason: 'gate_failed' })
  }

  private refused(s: CallState, eventId: string | null, refusal: { status: number; body: unknown; reason: string; rule?: string }): string {
    s.status = refusal.status
    s.error = refusal.reason
    s.refusedRule = refusal.rule
    this.life.finish(s)
    return realtimeErrorFrame(refusal.status, refusal.body, eventId)
  }

  private admitted(s: CallState, a: Admission, eventId: string | null): string | null | false {
    if (a.refuse) {
      s.admission = { settle: a.settle }
      return this.refused(s, eventId, a.refuse)
    }
    // The socket closed while the admission waited (on PostgreSQL): recorded as the close would
    // have, at $0, which frees its reservation; the frame is not sent.
    const by = this.calls.closedBy
    if (by) {
      abandoned(s, by)
      this.life.finish(s)
      return false
    }
    this.calls.admittedAs(s)
    this.calls.ask(s, eventId)
    // The frame goes upstream when this returns; what the gate left for after that runs then.
    a.afterSend?.()
    return null
  }
}
