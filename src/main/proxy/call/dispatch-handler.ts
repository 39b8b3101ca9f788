import type { IncomingHttpHeaders, IncomingMessage, OutgoingHttpHeaders } from 'node:http'
import type { Dispatcher } from 'undici'
import { sendError } from '../../http/errors'
import { STATUS_CLIENT_CLOSED } from '../../ledger/record'
import { type ClientHeaders, parseRawHeaders, responseHeaders } from '../headers'
import { upstreamPath } from '../routes'
import { type Deadline, deadlines } from './deadlines'
import { classifyUpstreamError, cutConnection, failHttp } from './failure'
import type { ForwardTimeouts, HeadersObserver } from './forward'
import { type LeftAnswers, ReadOn, readsOn } from './left-answers'
import { HeldAnswer, clientBase } from './relink'
import type { RequestStream } from './request-stream'
import { startHttpResponse } from './response'
import { sendsAgain, tellNotToRetry } from './retry'
import type { CallState, HttpCall } from './state'
import { STATUS_STOPPED, STOPPED_REASON, cutByStop } from './stop-cut'

/**
 * One call's exchange with the upstream: undici's dispatch handler (its methods on the class, so a
 * call makes one object for them, not one closure each), and what the exchange has come to.
 */
export class Forwarding implements Dispatcher.DispatchHandler {
  firstByte: Deadline | null = null
  /** Forwards the answer's body chunks once its headers are sent on. */
  private forward: ((chunk: Buffer) => boolean) | null = null
  /** The answer being held to be rewritten (./relink.ts), until it starts to be sent. */
  private held: HeldAnswer | null = null
  private retried = false
  /** The upstream answered (any status): it had the request, so it is never sent again. */
  private answered = false
  /** The answer's status and headers came (an informational one's not counted). */
  private headersCame = false
  /** Lets undici read on when the answer was held back for the client's full socket. */
  private resume: (() => void) | null = null
  /** The answer read on after its client left (./left-answers.ts), once it is. */
  private readOn: ReadOn | null = null

  constructor(
    readonly s: HttpCall,
    private readonly req: IncomingMessage,
    private readonly body: Buffer | RequestStream | null,
    private readonly headers: OutgoingHttpHeaders,
    private readonly dispatcher: Dispatcher,
    private readonly t: ForwardTimeouts,
    private readonly finish: (s: HttpCall) => void,
    private readonly warn: ((line: string) => void) | undefined,
    private readonly observe: HeadersObserver | undefined,
    private readonly fresh: (() => Dispatcher) | undefined,
    private readonly relink: ((body: string, base: string) => string | null) | null,
    private readonly left: LeftAnswers | undefined,
  ) {}

  send(via: Dispatcher): void {
    const s = this.s
    via.dispatch(
      {
        origin: s.route.upstream.origin,
        method: this.req.method as Dispatcher.HttpMethod,
        path: upstreamPath(s.route),
        headers: this.headers as Record<string, string | string[]>,
        body: this.body,
        // The call's own first-byte and idle timeouts time it, on every way out: a pool made with
        // undici's defaults (300 s each, as undici's own SOCKS5 agent made its pools) and not the
        // options of ./dispatchers.ts would cut calls at 5 minutes whatever the config said.
        headersTimeout: 0,
        bodyTimeout: 0,
      },
      this,
    )
  }

  /** Starts the wait for the answer (upstream.first_byte_timeout_ms), unless it has come or the call is over. */
  awaitFirstByte(): void {
    if (this.firstByte || this.headersCame || this.s.done) return
    this.firstByte = deadlines.add(this.t.first_byte_timeout_ms, () => this.noFirstByte())
    this.s.timers.push(this.firstByte)
  }

  /** The upstream takes a streamed body again: it is not waited on. */
  bodyFlowing(): void {
    const d = this.firstByte
    if (!d || this.headersCame) return
    deadlines.cancel(d)
    this.firstByte = null
    const timers = this.s.timers
    const i = timers.indexOf(d)
    if (i !== -1) timers.splice(i, 1)
  }

  noFirstByte(): void {
    failHttp(this.s, 'timeout', `no response within ${this.t.first_byte_timeout_ms} ms`, this.finish)
    this.s.abort?.()
  }

  /** The client's response closed: the call is recorded (completed, or how it was cut). */
  closed(): void {
    const s = this.s
    const res = s.res
    if (res.writableFinished) {
      this.finish(s)
      return
    }
    if (s.done) return
    if (cutByStop(res.req?.socket ?? res.socket)) {
      // Burnrate is stopping and cut the connection (past its grace, or a second signal).
      s.status = STATUS_STOPPED
      s.error = STOPPED_REASON
    } else if (cutConnection(res)) {
      // Burnrate cut this connection for an earlier call on it (pipelined): not the client's doing.
      s.status = s.upstreamStatus || 502
      s.error = 'connection_cut_by_burnrate'
    } else {
      // The client went away first: stop the upstream call and record what was metered.
      s.status = STATUS_CLIENT_CLOSED
      s.error = 'client_aborted'
      if (this.readOnForBill()) return
    }
    this.finish(s)
    s.abort?.()
  }

  /**
   * A non-streamed answer its client left after it began is read on for its bill (sent nowhere:
   * ./left-answers.ts), and the call recorded when it ends; false when it is not.
   */
  private readOnForBill(): boolean {
    if (!readsOn(this.s)) return false
    const r = new ReadOn(this.s, this.left, this.finish)
    this.readOn = r
    this.forward = (chunk) => r.meter(chunk)
    // Held back for the client's full socket, which will not drain now.
    this.resume?.()
    return true
  }

  /** Nothing came for upstream.idle_timeout_ms: the call fails (504), or, read on after its client left, ends as the 499 it is. */
  stalled(detail: string): void {
    if (this.readOn) this.readOn.end()
    else failHttp(this.s, 'timeout', detail, this.finish)
    this.s.abort?.()
  }

  onConnect(abort: (err?: Error) => void): void {
    // Not sent at all when the call already ended while it waited for a connection.
    if (this.s.done) abort(new Error('call ended'))
    else this.s.abort = abort
  }

  onHeaders(status: number, raw: Buffer[], resume: () => void): boolean {
    const s = this.s
    this.answered = true
    // 103 Early Hints and other informational responses come before the answer; they are not it.
    if (status < 200) return true
    this.headersCame = true
    if (this.firstByte) deadlines.cancel(this.firstByte)
    if (s.done) {
      s.abort?.()
      return false
    }
    const h = responseHeaders(raw)
    const t = this.t
    this.resume = resume
    if (!this.relink || status >= 400 || h.upstream['content-encoding']) {
      this.forward = respond(this, status, h, resume, t)
    } else {
      // Held until it ends (bounded by the idle timeout), then sent rewritten, with its new length.
      this.held = new HeldAnswer((parts, rewritten, broken) => {
        this.held = null
        if (rewritten) {
          h.client.delete('transfer-encoding')
          h.client.set('content-length', String(parts[0].length))
        }
        if (broken) tellNotToRetry(h.client, this.req.method)
        const send = respond(this, status, h, resume, t)
        this.forward = send
        for (const p of parts) send(p)
      })
      s.timers.push(
        deadlines.add(t.idle_timeout_ms, () => {
          if (!this.held) return
          // Cut as a stalled answer (what came of it sent first), not answered 504 as if none came.
          this.sendHeld()
          failHttp(s, 'timeout', `the answer did not end within ${t.idle_timeout_ms} ms`, this.finish)
          s.abort?.()
        }),
      )
    }
    // Read once undici's parser has handed on what it read with these headers: an answer that
    // came whole (nearly every non-streaming one) has then been written to the client (onComplete
    // ends it in the same parser step), so the observer is not on its way. A tick, not an
    // immediate: nothing to arm in libuv per call.
    if (this.observe) process.nextTick(observeLater, this.observe, s, status, h.upstream)
    return true
  }

  onData(chunk: Buffer): boolean {
    if (this.s.done) return true
    const held = this.held
    if (held) {
      // Too large to hold: sent as it came, not rewritten.
      held.push(chunk)
      return true
    }
    const forward = this.forward
    if (!forward) return true
    return forward(chunk)
  }

  onComplete(trailers: string[] | null): void {
    const s = this.s
    if (s.done) return
    if (this.readOn) return this.readOn.end()
    for (const x of s.timers) deadlines.cancel(x)
    const held = this.held
    const relink = this.relink
    if (held && relink) held.end((text) => relink(text, clientBase(this.req, s.route)))
    if (trailers && trailers.length > 0) s.res.addTrailers(parseRawHeaders(trailers as unknown as Buffer[]) as Record<string, string>)
    s.res.end()
  }

  /**
   * The upstream answered and then failed while its answer was held to be rewritten: the answer
   * goes on as it came, so far, and the failure then cuts it. Answered a 502 or 504 as if the
   * upstream had never answered, the client's SDK would send the call again: a second batch
   * created, and billed.
   */
  private sendHeld(): void {
    this.held?.broke()
  }

  onError(err: Error): void {
    const s = this.s
    if (s.done) return
    // Cut while read on after its client left: the 499 it is, with what came.
    if (this.readOn) return this.readOn.end()
    this.sendHeld()
    if (!this.retried && sendsAgain(err, this.req.method, this.body, this.answered, s.responseStarted)) {
      // A kept-alive connection the upstream had already closed: sent once more, on a fresh one (./retry.ts).
      this.retried = true
      s.abort = undefined
      this.send(this.fresh?.() ?? this.dispatcher)
      return
    }
    const upstream = s.route.upstream
    const f = classifyUpstreamError(err, s.responseStarted, this.t.connect_timeout_ms, upstream.host, s.ctx.provider.name)
    if (f.kind === 'invalid') {
      s.status = 400
      s.error = 'invalid_request'
      sendError(s.res, 'invalid_request', `The request cannot be forwarded: ${f.detail}.`)
      this.finish(s)
    } else {
      failHttp(s, f.kind, f.detail, this.finish, f.code, this.warn)
    }
  }
}

/** Sends the answer's status and headers on and returns what forwards its body (./response.ts); an idle upstream fails the call. */
function respond(
  f: Forwarding,
  status: number,
  h: { upstream: IncomingHttpHeaders; client: ClientHeaders },
  resume: () => void,
  t: ForwardTimeouts,
): (chunk: Buffer) => boolean {
  return startHttpResponse(f.s, status, h.upstream, h.client, resume, t.idle_timeout_ms, (detail) => f.stalled(detail))
}

function observeLater(observe: HeadersObserver, s: CallState, status: number, headers: IncomingHttpHeaders): void {
  try {
    observe(s, status, headers)
  } catch {
    // what an observer does is advisory; the call goes on
  }
}
