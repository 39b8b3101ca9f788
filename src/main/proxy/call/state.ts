import type { ServerResponse } from 'node:http'
import type { BodyTap, JsonCollector } from '../../metering/body-tap'
import type { JsonLines } from '../../metering/json-lines'
import type { EventStreamReader } from '../../metering/event-stream'
import type { SseParser } from '../../metering/sse'
import type { BatchResult, Meter, RequestInfo } from '../../providers/types'
import type { Admission, CallContext } from '../gate'
import type { Deadline } from './deadlines'
import type { Route } from '../routes'

/**
 * One metered call, from arrival to its ledger row: what every path (HTTP, WebSocket) keeps
 * about it. The lifecycle (lifecycle.ts) creates it, admits it and records it exactly once.
 */
export interface CallState {
  route: Route
  ctx: CallContext
  info: RequestInfo
  admission: Admission
  /** performance.now() at arrival. */
  started: number
  /** Stops the upstream exchange once it is under way; until then `done` keeps it from being sent. */
  abort?: (err?: Error) => void
  /** What is recorded: the upstream's status, or what ended the call (499, 502, 504...). */
  status: number
  /** The status the upstream answered with (0 until it answered). */
  upstreamStatus: number
  error: string | null
  /** The budget rule that refused it (`Refusal.rule`): the metrics' `rule` label. */
  refusedRule?: string
  /** The status the client was answered with, where it is not `status` (`CallRecord.client_status`). */
  clientStatus?: number
  responseStarted: boolean
  /**
   * Its client left before the answer's end reached it, which was read on for its bill
   * (./left-answers.ts): recorded 499 however whole the answer then came.
   */
  clientLeftFirst: boolean
  streamed: boolean
  meter?: Meter
  tap?: BodyTap
  sse?: SseParser | EventStreamReader
  json?: JsonCollector
  /** A JSON Lines answer's splitter (CallShape.lines). */
  lines?: JsonLines
  /** Records the requests a Batch API's results file held (../../batch/record.ts), when the server records them. */
  recordBatch?: (s: CallState, results: BatchResult[]) => void
  /** Meters the response chunks written but not yet metered (response.ts); the recorder calls it first. */
  drainTap?: () => void
  done: boolean
  /** Its pending timeouts (./deadlines.ts), cancelled when it ends. */
  timers: Deadline[]
  /** When the last response chunk came (performance.now()). */
  lastData: number
  /**
   * An audio call's multipart request body (a transcription's upload), which the call holds until
   * it ends anyway: read for the audio's length only if the answer gives no usage (./audio-usage.ts).
   */
  upload?: Upload
}

export interface Upload {
  body: Buffer
  contentType: string
}

/**
 * A call's state with every field it will have, so each call's object has one shape from the
 * start (fields added later would move it through a chain of shapes, and every function that
 * reads it would see several); HTTP and WebSocket calls alike (`res` undefined for the latter).
 */
function callState<R extends ServerResponse | undefined>(route: Route, ctx: CallContext, info: RequestInfo, started: number, res: R) {
  return {
    route,
    ctx,
    info,
    admission: {} as Admission,
    started,
    abort: undefined as ((err?: Error) => void) | undefined,
    status: 0,
    upstreamStatus: 0,
    error: null as string | null,
    responseStarted: false,
    clientLeftFirst: false,
    streamed: false,
    meter: undefined as Meter | undefined,
    tap: undefined as BodyTap | undefined,
    sse: undefined as SseParser | EventStreamReader | undefined,
    json: undefined as JsonCollector | undefined,
    lines: undefined as JsonLines | undefined,
    recordBatch: undefined as ((s: CallState, results: BatchResult[]) => void) | undefined,
    drainTap: undefined as (() => void) | undefined,
    done: false,
    timers: [] as Deadline[],
    lastData: 0,
    upload: undefined as Upload | undefined,
    res,
  }
}

export function newCallState(route: Route, ctx: CallContext, info: RequestInfo, started: number): CallState {
  return callState(route, ctx, info, started, undefined)
}

/** A call that came as a plain HTTP request: its answer goes to `res`. */
export interface HttpCall extends CallState {
  res: ServerResponse
}

/** The state of a call that came as a plain HTTP request (the same shape as newCallState's). */
export function newHttpCall(route: Route, ctx: CallContext, info: RequestInfo, started: number, res: ServerResponse): HttpCall {
  return callState(route, ctx, info, started, res)
}
