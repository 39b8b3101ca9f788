import type { CallState } from '../call/state'

/** What a steer asked: handed back when it is refused (`response.steer.failed`). */
export interface SteerAsk {
  previous_response_id?: unknown
  input?: unknown
}

/**
 * The steers on one Responses socket (`response.steer`: input queued for the running response;
 * the server ends that response and starts a successor by itself). A steer is a call from its
 * admission on: queued in its lane until a successor begins there and takes it as its call, or
 * until it fails, waits for the client's next `response.create`, or the socket ends. Until then
 * it holds its reservation; `release` frees one that no successor will take.
 */
export class SocketSteers {
  private readonly queued = new Map<string, CallState[]>()
  private readonly asks = new WeakMap<CallState, SteerAsk>()

  constructor(private readonly release: (s: CallState) => void) {}

  /** `s` is a steer, asking `ask`, until a successor takes it or it ends. */
  mark(s: CallState, ask: SteerAsk): void {
    this.asks.set(s, ask)
  }

  is(s: CallState): boolean {
    return this.asks.has(s)
  }

  /** What steer `s` asked; it is a steer no more (refused, or not sent). */
  unmark(s: CallState): SteerAsk | undefined {
    const ask = this.asks.get(s)
    this.asks.delete(s)
    return ask
  }

  /** An admitted steer, sent upstream: it waits in `lane` for its successor. */
  queue(s: CallState, lane: string): void {
    const q = this.queued.get(lane)
    if (q) q.push(s)
    else this.queued.set(lane, [s])
  }

  /** The lane of the oldest steer queued, if one is. */
  firstLane(): string | undefined {
    for (const [lane, q] of this.queued) if (q.length > 0) return lane
    return undefined
  }

  waiting(lane: string): boolean {
    return (this.queued.get(lane)?.length ?? 0) > 0
  }

  /**
   * The oldest steer in `lane`, taken by the successor that began there as its call; every other
   * one queued there went into the same successor, and is released.
   */
  take(lane: string): CallState | undefined {
    const q = this.queued.get(lane)
    const s = q?.shift()
    if (!s) return undefined
    // (A lane is kept only while a steer waits in it: the client names lanes without end.)
    this.queued.delete(lane)
    this.asks.delete(s)
    for (const other of q!.splice(0)) this.drop(other)
    return s
  }

  /** The oldest steer in `lane` will have no successor (it failed, or waits for a `response.create`): released. */
  dropOldest(lane: string): void {
    const q = this.queued.get(lane)
    const s = q?.shift()
    if (q?.length === 0) this.queued.delete(lane)
    if (s) this.drop(s)
  }

  /** Every steer queued, taken out (the socket timed out or ended). */
  drain(): CallState[] {
    const all: CallState[] = []
    for (const q of this.queued.values()) all.push(...q)
    this.queued.clear()
    for (const s of all) this.asks.delete(s)
    return all
  }

  /** `s` freed without a record: no response was generated for it. */
  drop(s: CallState): void {
    this.asks.delete(s)
    this.release(s)
  }
}
