import { STATUS_CLIENT_CLOSED } from '../../ledger/record'
import type { CallLifecycle } from '../call/lifecycle'
import { STATUS_STOPPED, STOPPED_REASON } from '../call/stop-cut'
import type { CallState } from '../call/state'
import type { OpenCalls } from './open-calls'
import type { SocketSteers } from './steers'

/** The side that ended a socket first. */
export type ClosedBy = 'client' | 'upstream' | 'burnrate'

/**
 * The end of a Responses socket for the calls still open on it: each recorded as an HTTP call
 * cut short is (abandoned by the client, reset by the upstream, or timed out in the upstream's
 * silence), and each steer still queued freed without a record.
 */
export class SocketEnd {
  /** Which side closed the socket first; a call admitted after that is recorded, never sent. */
  closedBy: ClosedBy | null = null

  constructor(
    private readonly open: OpenCalls,
    private readonly steers: SocketSteers,
    private readonly life: CallLifecycle,
  ) {}

  /**
   * The upstream went silent past its time limit (./silence.ts): the open calls are recorded as an
   * HTTP call's are, 504 `upstream_timeout` before any frame ($0: nothing came), `upstream_stalled`
   * after (what streamed metered, the rest estimated); the relay then closes the socket.
   */
  timedOut(): void {
    // A steer whose successor never began is recorded as a response.create that got no answer.
    this.open.push(...this.steers.drain())
    this.endOpen('upstream', (s) => {
      s.status = 504
      s.error = s.responseStarted ? 'upstream_stalled' : 'upstream_timeout'
    })
  }

  /**
   * The socket closed: calls still open are recorded as abandoned by the client or cut by the
   * upstream.
   */
  closed(by: ClosedBy): void {
    this.endOpen(by, (s) => abandoned(s, by))
  }

  /** Records every open call, each as `cut` says, but an erred one: its response had ended (failed) already, and it is recorded with its error. */
  private endOpen(by: ClosedBy, cut: (s: CallState) => void): void {
    this.closedBy ??= by
    for (const s of this.steers.drain()) releaseSteer(this.life, s)
    for (const s of this.open.takeAll()) {
      if (!this.open.erred.has(s)) cut(s)
      this.life.finish(s)
    }
  }
}

/** A call the socket's end cut short: abandoned by the client, reset by the upstream, or cut by Burnrate's stop. */
export function abandoned(s: CallState, by: ClosedBy): void {
  s.status = by === 'client' ? STATUS_CLIENT_CLOSED : by === 'upstream' ? 502 : STATUS_STOPPED
  s.error = by === 'client' ? 'client_aborted' : by === 'upstream' ? 'upstream_reset' : STOPPED_REASON
}

/** A steer no successor will take: its reservation freed, nothing recorded (no response was generated for it). */
export function releaseSteer(life: CallLifecycle, s: CallState): void {
  try {
    s.admission.settle?.(0)
  } finally {
    life.leave()
  }
}
