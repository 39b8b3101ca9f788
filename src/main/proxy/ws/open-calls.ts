import type { CallState } from '../call/state'

/**
 * The open calls of one Responses socket, in their lanes, and how far each has got. Responses in
 * one lane are sequential, so an upstream frame belongs to the oldest open call of its lane: a
 * socket's one lane, or with OpenAI's multiplexing the `stream_id` the frame echoes from its
 * `response.create` (read by ./responses-calls.ts).
 */
export class OpenCalls {
  private readonly open: CallState[] = []
  /** Each call's lane (the `stream_id` of its frame; '' for none). */
  private readonly laneOf = new WeakMap<CallState, string>()
  /** Whether a client frame on this socket named a lane: upstream frames are then matched to calls by theirs. */
  lanes = false
  /** Calls whose response the upstream has begun (a `response.*` event came): an `error` after that is metered. */
  readonly begun = new WeakSet<CallState>()
  /**
   * Begun calls the upstream then sent an `error` for. OpenAI follows it with the response's
   * `response.failed` (its usage, 0 for a refusal such as `insufficient_quota`), so the call
   * waits for that, as the same stream over HTTP is read to its end.
   */
  readonly erred = new WeakSet<CallState>()

  /** `s` is in `lane` (not yet open: its admission decides). */
  setLane(s: CallState, lane: string): void {
    this.laneOf.set(s, lane)
  }

  lane(s: CallState): string | undefined {
    return this.laneOf.get(s)
  }

  /** Admitted calls, each last in its lane. */
  push(...calls: CallState[]): void {
    this.open.push(...calls)
  }

  /** A successor response's call: it goes first in its lane, as the frames that follow are its. */
  first(s: CallState, lane: string): void {
    const i = this.open.findIndex((c) => this.laneOf.get(c) === lane)
    if (i < 0) this.open.push(s)
    else this.open.splice(i, 0, s)
  }

  /**
   * The oldest open call of the lane a frame names. On a socket of one lane, the oldest; a frame
   * naming none on a multiplexed one is the unnamed lane's, or (an upstream that does not echo
   * lanes) the oldest call's.
   */
  oldest(named: string | null): CallState | undefined {
    if (!this.lanes) return this.open[0]
    const lane = named ?? ''
    const s = this.open.find((c) => this.laneOf.get(c) === lane)
    return s ?? (named === null ? this.open[0] : undefined)
  }

  /** The open call after `s` in its lane, if one is. */
  next(s: CallState): CallState | undefined {
    const i = this.open.indexOf(s)
    const lane = this.laneOf.get(s)
    return this.open.find((c, j) => j > i && this.laneOf.get(c) === lane)
  }

  remove(s: CallState): void {
    const i = this.open.indexOf(s)
    if (i >= 0) this.open.splice(i, 1)
  }

  /** The oldest open call that has not erred (an erred call's turn is over for the agent). */
  firstUnerred(): CallState | undefined {
    return this.open.find((c) => !this.erred.has(c))
  }

  /** Whether an open call has erred (waits for its terminal event). */
  anyErred(): boolean {
    return this.open.some((c) => this.erred.has(c))
  }

  /** The open calls that have erred, taken out (their wait for a terminal event is over). */
  takeErred(): CallState[] {
    const out = this.open.filter((c) => this.erred.has(c))
    for (const s of out) this.remove(s)
    return out
  }

  /** Every open call, taken out (the socket ended). */
  takeAll(): CallState[] {
    return this.open.splice(0)
  }
}
