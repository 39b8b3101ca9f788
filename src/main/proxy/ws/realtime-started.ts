import type { CallLifecycle } from '../call/lifecycle'
import type { CallState } from '../call/state'
import type { Refusal } from '../gate'
import { REFUSED_CLOSE, checkBudgets, closeReason, dropRefusal, recordRefusal } from './budget-check'
import { realtimeErrorFrame } from './realtime-frames'

/** Where a socket's calls may send frames of their own: to the upstream, to the client (each dropped once that side is not open). */
export interface SocketWire {
  toUpstream(text: string): void
  toClient(text: string): void
  /** Closes the client's socket with `code` and `reason` (if still open); the relay passes the close on upstream (./relay-close.ts). */
  close(code: number, reason: string): void
}

/** What the check of a server-started response needs of its socket's calls (./realtime-calls.ts). */
export interface StartedResponses {
  /** A call of the socket (its key, model and attribution), begun. */
  begin(): CallState
  /** Whether the response is still under way on the open socket (its `response.done` not read yet). */
  running(id: string): boolean
  /** Whether the socket is still open (neither side closed it). */
  open(): boolean
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
 *
 * OpenAI bills each cancelled response's prompt (the whole conversation), so a client that goes
 * on streaming its microphone would spend on past the limit, a cancelled turn at a time. The next
 * response the server starts while the key is still over its limit (the budgets admitted no
 * response of the socket's in between, as after a limit raised) is stopped the same way, and the socket is then
 * closed: nothing more the client sends goes upstream, each response the server still starts is
 * cancelled unchecked, and once the cancelled responses' `response.done` (their bill) has been read
 * and passed on, or after `holdMs` without it, the client's socket is closed with 1011 and a reason
 * naming the rule (../budget-check.ts), which the relay passes on upstream.
 */
export class RealtimeStartedGate {
  private wire: SocketWire | null = null
  private cancels = 0
  /** The last check found the key over its limit and stopped the response: the next one found so closes the socket. */
  private stopped = false
  /** The close frame's reason, once the socket is being closed. */
  private closing: string | null = null
  /** The responses cancelled whose `response.done` was not read yet: the close waits for their bill. */
  private readonly cancelled = new Set<string>()
  private timer: NodeJS.Timeout | null = null

  constructor(
    private readonly life: CallLifecycle,
    private readonly socket: StartedResponses,
    /** How long the close waits for the cancelled responses' `response.done` (upstream.connect_timeout_ms). */
    private readonly holdMs: number,
  ) {}

  attach(wire: SocketWire): void {
    this.wire = wire
  }

  /** Whether the socket is being closed for its key's limit: what the client sends is not sent upstream. */
  get shut(): boolean {
    return this.closing !== null
  }

  /** The server started response `id` by itself: checked, and stopped if its key is blocked. */
  started(id: string): void {
    if (!this.wire) return
    if (this.closing !== null) return this.cancel(id)
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

  /** The budgets admitted a response of the socket's (a client's `response.create`): its key is not over its limit now. */
  admitted(): void {
    this.stopped = false
  }

  /** Response `id`'s `response.done` was read: when it was the last cancelled one the close waits for, the socket is closed. */
  ended(id: string): void {
    if (!this.cancelled.delete(id) || this.closing === null || this.cancelled.size > 0) return
    // The relay passes the response.done on once its calls have read it: the close follows it.
    queueMicrotask(() => this.close())
  }

  private decided(s: CallState, id: string, r: Refusal | null): void {
    if (this.closing !== null) {
      // Decided once the close began (the check waited on the database): cancelled as any response started now.
      if (r) dropRefusal(this.life, s)
      if (this.socket.running(id)) this.cancel(id)
      return
    }
    if (!r || !r.limitReached) {
      // The key is not over its limit (one raised since, say): a stop after this leaves the socket open again.
      this.stopped = false
      if (r) dropRefusal(this.life, s)
      return
    }
    const running = this.socket.running(id)
    // A response that ended meanwhile (the check waited on the database) goes on, unless the key was stopped before.
    if (!this.socket.open() || (!running && !this.stopped)) return dropRefusal(this.life, s)
    recordRefusal(this.life, s, r)
    if (running) this.cancel(id)
    // The relay passes the response.created on once its calls have read it: the error follows it.
    const frame = realtimeErrorFrame(r.status, r.body, null)
    queueMicrotask(() => this.wire?.toClient(frame))
    if (!this.stopped) {
      this.stopped = true
      return
    }
    this.closing = closeReason(`${r.reason} (${r.rule ? `budget rule "${r.rule}"` : 'Burnrate'}): the key is over its limit; the server's response was cancelled`)
    if (this.cancelled.size === 0) return queueMicrotask(() => this.close())
    this.timer = setTimeout(() => this.close(), this.holdMs)
    this.timer.unref()
  }

  private cancel(id: string): void {
    if (this.cancelled.has(id)) return
    this.cancelled.add(id)
    this.wire?.toUpstream(JSON.stringify({ type: 'response.cancel', event_id: `event_burnrate_cancel_${++this.cancels}`, response_id: id }))
  }

  private close(): void {
    if (this.timer) clearTimeout(this.timer)
    this.timer = null
    if (this.closing !== null) this.wire?.close(REFUSED_CLOSE, this.closing)
  }
}
