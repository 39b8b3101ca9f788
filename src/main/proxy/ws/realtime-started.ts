import type { CallLifecycle } from '../call/lifecycle'
import type { CallState } from '../call/state'
import type { Refusal } from '../gate'
import { checkBudgets, dropRefusal, recordRefusal } from './budget-check'
import { realtimeErrorFrame } from './realtime-frames'

/** Where a socket's calls may send frames of their own: to the upstream, to the client (each dropped once that side is not open). */
export interface SocketWire {
  toUpstream(text: string): void
  toClient(text: string): void
}

/** What the check of a server-started response needs of its socket's calls (./realtime-calls.ts). */
export interface StartedResponses {
  /** A call of the socket (its key, model and attribution), begun. */
  begin(): CallState
  /** Whether the response is still under way on the open socket (its `response.done` not read yet). */
  running(id: string): boolean
}

/**
 * A response a Realtime server starts by itself (server or semantic VAD, at the end of the user's
 * speech), which no `response.create` asked for and the gate never saw, is checked by the budgets
 * as the socket's `response.create` would be (./budget-check.ts: an admitted check counts and
 * reserves nothing). When a `block` rule's limit is already reached (the money is spent; not a
 * refusal for what calls in flight are expected to add, nor a per-minute rate), the response is
 * stopped: the upstream is sent a `response.cancel` naming it, the client the Realtime API's own
 * `error` event with the refusal (`budget_exceeded`, naming the rule), after the response's
 * `response.created` it already had, and the refusal is recorded (429, $0, the rule). The socket
 * goes on, as after a refused `response.create`; the cancelled response is recorded at its
 * `response.done` with the usage OpenAI billed for it (its prompt, and what it generated before
 * the cancel), as any response is. A check the gate cannot make (the database away) stops nothing.
 */
export class RealtimeStartedGate {
  private wire: SocketWire | null = null
  private cancels = 0

  constructor(
    private readonly life: CallLifecycle,
    private readonly socket: StartedResponses,
  ) {}

  attach(wire: SocketWire): void {
    this.wire = wire
  }

  /** The server started response `id` by itself: checked, and stopped if its key is blocked. */
  started(id: string): void {
    if (!this.wire) return
    const s = this.socket.begin()
    let r: Refusal | null | Promise<Refusal | null>
    try {
      r = checkBudgets(this.life, s)
    } catch {
      return this.life.leave()
    }
    if (r instanceof Promise) void r.then((x) => this.decided(s, id, x), () => this.life.leave())
    else this.decided(s, id, r)
  }

  private decided(s: CallState, id: string, r: Refusal | null): void {
    if (!r) return
    // A response that ended meanwhile (the check waited on the database), or one under a limit not yet reached, goes on.
    if (!r.limitReached || !this.socket.running(id)) return dropRefusal(this.life, s)
    recordRefusal(this.life, s, r)
    this.wire?.toUpstream(JSON.stringify({ type: 'response.cancel', event_id: `event_burnrate_cancel_${++this.cancels}`, response_id: id }))
    // The relay passes the response.created on once its calls have read it: the error follows it.
    const frame = realtimeErrorFrame(r.status, r.body, null)
    queueMicrotask(() => this.wire?.toClient(frame))
  }
}
