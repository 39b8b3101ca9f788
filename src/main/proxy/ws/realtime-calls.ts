import { performance } from 'node:perf_hooks'
import type { IncomingHttpHeaders } from 'node:http'
import { isObject, parseObject, type Usage } from '../../metering/usage'
import { RealtimeMeter, RESPONSE_DONE, TRANSCRIBED } from '../../providers/openai-realtime'
import { xaiUsage } from '../../providers/xai'
import type { Attributors } from '../call/context'
import { describeCall } from '../call/context'
import type { CallLifecycle } from '../call/lifecycle'
import { type CallState, newCallState } from '../call/state'
import type { Route } from '../routes'
import { frameType, responseIdOf } from './frames'
import { addOfferedKeys, modelOfQuery, offeredKeys, realtimeError, sessionModels, withProtocolKey } from './realtime-frames'
import { RealtimeClientFrames } from './realtime-client'
import type { SocketCalls } from './socket-calls'
import { RealtimeStartedGate, type SocketWire } from './realtime-started'
import { type ClosedBy, abandoned } from './socket-end'

/** The server's events that state the session (a beta transcription-only session, `?intent=transcription`, has its own). */
const SESSION_EVENTS = new Set(['session.created', 'session.updated', 'transcription_session.created', 'transcription_session.updated'])

/**
 * The calls on one Realtime API socket (`GET /v1/realtime?model=…` upgraded, the GA interface or
 * the beta one): each response is one call, recorded at its `response.done` with its usage, and
 * each input transcription one more, at the transcription model's rates. A response the client
 * asks for (`response.create`) is admitted by the gate first (./realtime-client.ts); one the
 * server starts by itself (server VAD, at the end of the user's speech) was asked for by no
 * frame, and is recorded all the same; it is checked once begun, and stopped if its key is over a
 * `block` limit, the socket closed if it still is at the next one (./realtime-started.ts; the
 * socket's upgrade was checked: ./realtime-upgrade.ts).
 * Responses may run side by side (out-of-band ones), so a response's events are matched to its
 * call by its id.
 *
 * The model is the upgrade's `model` query until the server's `session.created` or
 * `session.updated` names one. Audio frames (most of a socket's bytes) are never parsed: an
 * upstream frame's type is read from its first bytes, and only the few billed or session events
 * are read whole.
 */
export class RealtimeSocketCalls implements SocketCalls {
  private model: string
  /** The session's input transcription model ('' while off, or not yet named). */
  private transcriber = ''
  /** Admitted `response.create`s waiting for their response to begin, oldest first. */
  private readonly asked: CallState[] = []
  /** The client's id of each one's frame (`event_id`), which an upstream `error` answering it names. */
  private readonly eventIds = new WeakMap<CallState, string>()
  /** Responses under way, by id. */
  private readonly running = new Map<string, CallState>()
  /**
   * Responses under way when the client closed, by id: held (recorded 499 either way) until the
   * upstream answers the close, so a `response.done` that comes meanwhile is their bill; else
   * `release` records their estimate.
   */
  private readonly leaving = new Map<string, CallState>()
  /** The usage of the last response that ended: the least a response cut short was billed for (its prompt). */
  private last: Usage | null = null
  /** Which side closed the socket first; a call admitted after that is recorded, never sent. */
  closedBy: ClosedBy | null = null
  private readonly client: RealtimeClientFrames
  /** The upgrade's headers, with a browser's subprotocol key as its `Authorization` (./realtime-frames.ts). */
  private readonly headers: IncomingHttpHeaders
  /** The keys a browser offers as subprotocols: each budgeted beside the one the calls are recorded under. */
  private readonly offered: string[]
  private readonly serverStarted: RealtimeStartedGate

  constructor(
    private readonly life: CallLifecycle,
    private readonly route: Route,
    headers: IncomingHttpHeaders,
    private readonly who: Attributors,
    /** How long a close for the key's limit waits for the bills of the responses it cancelled (upstream.connect_timeout_ms). */
    holdMs: number,
  ) {
    this.headers = withProtocolKey(headers)
    this.offered = offeredKeys(headers)
    this.model = modelOfQuery(route.query, route.upstream.provider.name)
    this.client = new RealtimeClientFrames(life, this)
    this.serverStarted = new RealtimeStartedGate(
      life,
      { begin: () => this.begin(), running: (id) => !this.closedBy && this.running.has(id), open: () => !this.closedBy },
      holdMs,
    )
  }

  /** Where a response the server started is stopped from (./realtime-started.ts). */
  attach(wire: SocketWire): void {
    this.serverStarted.attach(wire)
  }

  fromClient(data: Buffer, binary = false): string | null | false | Promise<string | null | false> {
    // The socket is being closed for its key's limit: nothing more goes upstream.
    if (this.serverStarted.shut) return false
    return this.client.fromClient(data, binary)
  }

  /** A call of this socket's, begun now: a response, or an input transcription. */
  begin(transcription = false): CallState {
    // Its prompt is the session's conversation, not the frame: the body names the model alone, and
    // counts no bytes (so the budgets learn no cost per byte of it).
    const { info, ctx } = describeCall(this.route, 'POST', this.headers, { model: transcription ? this.transcriber : this.model }, 0, Date.now(), this.who)
    addOfferedKeys(ctx, this.offered)
    if (transcription) ctx.shape = { ...ctx.shape, endpoint: 'realtime.transcription' }
    const s = this.life.begin(newCallState(this.route, ctx, info, performance.now()))
    s.streamed = true
    return s
  }

  /** An admitted `response.create` (its frame's `event_id`, if any) goes upstream: it waits for its response. */
  ask(s: CallState, eventId: string | null): void {
    if (eventId) this.eventIds.set(s, eventId)
    this.asked.push(s)
    this.serverStarted.admitted()
  }

  fromUpstream(data: Buffer): void {
    const type = frameType(data.toString('utf8', 0, Math.min(data.length, 300)))
    if (this.closedBy) {
      // Once the socket's end recorded its open calls, a frame still in flight (the upstream's
      // socket closes after the client's) would record one of them again. An input transcription
      // is a call of its own, billed by OpenAI: one sent before the upstream answered the client's
      // close is recorded all the same, and so is a held response's end, with its usage.
      if (this.closedBy !== 'client') return
      if (type === TRANSCRIBED) this.transcribed(data)
      else if (type === RESPONSE_DONE) this.leftDone(data.toString('utf8'))
      return
    }
    if (SESSION_EVENTS.has(type)) {
      const m = sessionModels(parseObject(data.toString('utf8'))?.session)
      if (m.model) this.model = m.model
      if (m.transcriber !== undefined) this.transcriber = m.transcriber
    } else if (type === 'response.created') {
      const id = responseIdOf(data.toString('utf8'))
      // The oldest response asked for, else one the server started by itself: that one is checked now.
      const asked = this.asked.shift()
      const s = asked ?? this.unasked()
      s.responseStarted = true
      if (id) this.running.set(id, s)
      if (!asked && id) this.serverStarted.started(id)
    } else if (type === RESPONSE_DONE) {
      const text = data.toString('utf8')
      const id = responseIdOf(text)
      let s = id ? this.running.get(id) : undefined
      if (id) this.running.delete(id)
      // (A response whose beginning was not seen: its end is its bill all the same.)
      s ??= this.unasked()
      this.end(s, type, text)
      const r = s.meter?.result()
      if (r?.usage && r.usage.input_tokens > 0 && !r.partialOutput) this.last = r.usage
      if (id) this.serverStarted.ended(id)
    } else if (type === TRANSCRIBED) {
      this.transcribed(data)
    } else if (type === 'error') {
      this.refused(data.toString('utf8'))
    }
  }

  /** An input transcription's result: a call at the transcription model's rates. */
  private transcribed(data: Buffer): void {
    const text = data.toString('utf8')
    // One without usage (the beta's, before OpenAI added it) says nothing to bill by: not recorded.
    if (!isObject(parseObject(text)?.usage)) return
    const s = this.begin(true)
    this.admittedAs(s)
    this.end(s, TRANSCRIBED, text)
  }

  /** A response the server started by itself: recorded, not gated (no frame asked for it; its check stops it, or not: ./realtime-started.ts). */
  private unasked(): CallState {
    const s = this.begin()
    this.admittedAs(s)
    s.responseStarted = true
    return s
  }

  /** A call that goes (or went) upstream: answered 200 until it says otherwise, metered from its events. */
  admittedAs(s: CallState): void {
    s.status = 200
    s.upstreamStatus = 200
    // xAI's voice agent: its usage carries its charge when it reports one, and it bills by the minute.
    s.meter = this.route.upstream.provider.name === 'xai' ? new RealtimeMeter(xaiUsage, true) : new RealtimeMeter()
  }

  private end(s: CallState, type: string, text: string): void {
    try {
      s.meter?.event(type, text)
      // A response.done without usage: estimated after the last response that ended.
      if (s.meter instanceof RealtimeMeter) s.meter.unreportedAfter(this.last)
    } catch {
      // A frame we cannot read never stops the relay.
    }
    this.life.finish(s)
  }

  /**
   * An upstream `error` event. One that answers a `response.create` still waiting (it names that
   * frame's `event_id`, or names none) refused it before any of a response (the session already
   * has a response under way, a bad parameter): recorded with its status at $0, as an HTTP error
   * answer is. Should it have answered another frame of the client's after all, the response that
   * frame asked for is still recorded at its `response.done`, as one the server started.
   */
  private refused(text: string): void {
    if (this.asked.length === 0) return
    const ev = parseObject(text)
    if (!ev) return
    const e = realtimeError(ev, text)
    const i = e.eventId === null ? 0 : this.asked.findIndex((c) => this.eventIds.get(c) === e.eventId)
    if (i < 0) return
    const [s] = this.asked.splice(i, 1)
    s.status = e.status
    s.upstreamStatus = e.status
    s.error = e.code || 'upstream_error'
    s.meter = undefined
    this.life.finish(s)
  }

  openState(): 'none' | 'waiting' | 'streaming' {
    return this.running.size > 0 ? 'streaming' : this.asked.length > 0 ? 'waiting' : 'none'
  }

  /** The upstream went silent past its time limit: 504, `upstream_timeout` before a response began ($0), `upstream_stalled` after. */
  timedOut(): void {
    this.endAll('upstream', (s) => {
      s.status = 504
      s.error = s.responseStarted ? 'upstream_stalled' : 'upstream_timeout'
    })
  }

  closed(by: ClosedBy): void {
    if (by === 'client' && this.closedBy === null) {
      // The responses under way are held for their response.done (OpenAI bills what it generated).
      for (const [id, s] of this.running) {
        abandoned(s, 'client')
        this.leaving.set(id, s)
      }
      this.running.clear()
    } else if (by !== 'client') this.release()
    this.endAll(by, (s) => abandoned(s, by))
  }

  /** A held response's `response.done`, after the client's close: its usage is its bill, recorded 499 as the client left. */
  private leftDone(text: string): void {
    const id = responseIdOf(text)
    const s = id ? this.leaving.get(id) : undefined
    if (!s || !id) return
    this.leaving.delete(id)
    if (s.meter instanceof RealtimeMeter) s.meter.leftBeforeDone()
    this.end(s, RESPONSE_DONE, text)
  }

  /** The upstream answered the client's close (or did not in time) without their response.done: the held responses are recorded as estimated. */
  release(): void {
    for (const s of this.leaving.values()) {
      if (s.meter instanceof RealtimeMeter) s.meter.cutAfter(this.last)
      this.life.finish(s)
    }
    this.leaving.clear()
  }

  private endAll(by: ClosedBy, cut: (s: CallState) => void): void {
    this.closedBy ??= by
    const all = [...this.asked.splice(0), ...this.running.values()]
    this.running.clear()
    for (const s of all) {
      cut(s)
      if (s.responseStarted && s.meter instanceof RealtimeMeter) s.meter.cutAfter(this.last)
      this.life.finish(s)
    }
  }
}
