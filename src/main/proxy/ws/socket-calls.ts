import type { ClosedBy } from './socket-end'
import type { SocketWire } from './realtime-started'

/**
 * What the relay (./relay-frames.ts, ./relay-close.ts, ./silence.ts) asks of a metered socket's
 * calls, whichever API the socket speaks: a Responses socket's (./responses-calls.ts) or a
 * Realtime one's (./realtime-calls.ts).
 */
/**
 * What becomes of a client's frame: null, forwarded; a string, the error frame it is answered
 * with instead (not sent upstream); false, dropped (the socket closed while its admission waited);
 * `close`, not sent, and the client's socket closed with that code and reason (an API that
 * reports errors so: Gemini Live).
 */
export type ClientVerdict = string | null | false | { close: number; reason: string }

export interface SocketCalls {
  /** A text frame from the client (or a binary one holding JSON): what becomes of it; a promise while its admission waits. */
  fromClient(data: Buffer, binary?: boolean): ClientVerdict | Promise<ClientVerdict>
  /** A JSON frame from the upstream, on its way to the client. */
  fromUpstream(data: Buffer): void
  /** Whether a response is open: `waiting` for its first frame, or `streaming` (./silence.ts). */
  openState(): 'none' | 'waiting' | 'streaming'
  /** The upstream went silent past its time limit: the open calls are recorded as timed out. */
  timedOut(): void
  /** The socket closed: calls still open are recorded as abandoned by the client or cut by the upstream. */
  closed(by: ClosedBy): void
  /**
   * The upstream did not answer the client's close within upstream.connect_timeout_ms: calls held
   * for their bill after that close (a Realtime response's `response.done`) are recorded as they
   * stand. The upstream's own close (`closed('upstream')`) does the same.
   */
  release?(): void
  /** Where the calls may send frames of their own (a Realtime socket's cancel of a response its key may not have: ./realtime-started.ts). */
  attach?(wire: SocketWire): void
}
