import type { IncomingHttpHeaders, IncomingMessage, OutgoingHttpHeaders } from 'node:http'
import { performance } from 'node:perf_hooks'
import type { Dispatcher } from 'undici'
import { sendError } from '../../http/errors'
import { STATUS_CLIENT_CLOSED } from '../../ledger/record'
import { anthropicKeyToApiKey } from '../anthropic-key-header'
import { type ClientHeaders, parseRawHeaders, responseHeaders, upstreamRequestHeaders } from '../headers'
import { upstreamPath } from '../routes'
import { type Deadline, deadlines } from './deadlines'
import { classifyUpstreamError, cutConnection, failHttp } from './failure'
import { STATUS_STOPPED, STOPPED_REASON, cutByStop } from './stop-cut'
import { HeldAnswer, clientBase } from './relink'
import type { LeftAnswer, LeftAnswers } from './left-answers'
import type { RequestStream } from './request-stream'
import { startHttpResponse } from './response'
import type { CallState, HttpCall } from './state'

/** Sees every upstream answer's status and headers (plan windows); must not throw or take long. */
/**
 * Sees an answer's headers for call `s`. `at` is when they came, where that is before now: a
 * socket's upgrade answer, shown with its first call (ms since the epoch; else they came now).
 */
export type HeadersObserver = (s: CallState, status: number, headers: IncomingHttpHeaders, at?: number) => void

export interface ForwardTimeouts {
  connect_timeout_ms: number
  first_byte_timeout_ms: number
  idle_timeout_ms: number
}

/**
 * Sends an admitted HTTP call upstream with undici and streams the answer back to the client,
 * chunk by chunk; `finish` records the call when it ends (completed, failed or abandoned).
 */
export function forwardHttp(
  s: HttpCall,
  req: IncomingMessage,
  /** Read whole, or on its way as it comes (./request-stream.ts), with the client's Content-Length if it sent one. */
  body: Buffer | RequestStream | null,
  dispatcher: Dispatcher,
  t: ForwardTimeouts,
  finish: (s: HttpCall) => void,
  /** Logs why an upstream could not be reached. */
  warn?: (line: string) => void,
  observe?: HeadersObserver,
  /** A new connection, for sending the call again when its kept-alive one turned out closed. */
  fresh?: () => Dispatcher,
  /** Where an answer read on after its client left is kept while it is (./left-answers.ts): a stop ends them. */
  left?: LeftAnswers,
): void {
  const res = s.res
  const upstream = s.route.upstream
  const headers = upstreamRequestHeaders(req.headers, upstream.host)
  anthropicKeyToApiKey(upstream, headers)
  // The client has had its 100 Continue from Burnrate (Node's server sends it), and its body is
  // read whole or coming: nothing to wait for upstream (undici refuses the header).
  delete headers.expect
  if (Buffer.isBuffer(body)) {
    headers['content-length'] = String(body.length)
  }
  // An answer to rewrite (./relink.ts) is asked for uncompressed: it is small, and read whole.
  const relink = s.ctx.shape.relink && upstream.provider.relink ? upstream.provider.relink.bind(upstream.provider) : null
  if (relink) headers['accept-encoding'] = 'identity'
  const f = new Forwarding(s, req, body, headers, dispatcher, t, finish, warn, observe, fresh, relink, left)
  // Timed from when the request has gone whole: a body streamed upstream may take minutes to send,
  // so while it goes the upstream is timed only when it stops taking it (as a client that stops
  // sending is not timed, as one whose body is read whole is not).
  if (body === null || Buffer.isBuffer(body)) f.awaitFirstByte()
  else body.watch(f)
  res.on('close', () => f.closed())
  f.send(dispatcher)
  // What the gate left for after the dispatch (the runaway check when it cannot refuse) is queued
  // behind undici's write, which on a kept-alive connection is an immediate of its own.
  s.admission.afterSend?.()
}

/**
 * One call's exchange with the upstream: undici's dispatch handler (its methods on the class, so a
 * call makes one object for them, not one closure each), and what the exchange has come to.
 */
class Forwarding implements Dispatcher.DispatchHandler, LeftAnswer {
  firstByte: Deadline | null = null
  /** Forwards the answer's body chunks once its headers are sent on. */
  private forward: ((chunk: Buffer) => boolean) | null = null
  /** The answer being held to be rewritten, and how to start sending it once it is (or cannot be). */
  private held: HeldAnswer | null = null
  private startHeld: ((body: Buffer[], rewritten: boolean, broken?: boolean) => void) | null = null
  private retried = false
  /** The upstream answered (any status): it had the request, so it is never sent again. */
  private answered = false
  /** The answer's status and headers came (an informational one's not counted). */
  private headersCame = false
  /** Lets undici read on when the answer was held back for the client's full socket. */
  private resume: (() => void) | null = null

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
   * A non-streamed answer its client left after it began: the provider generated it whole, and
   * billed it, before its first byte, and its usage comes at its end. It is read on (not sent
   * anywhere), bounded by upstream.idle_timeout_ms of silence and by a stop, and the call is
   * recorded 499 at the answer's own usage when it ends, or at what came if it is cut. A stream
   * is stopped instead: its provider stops generating, and billing, when it is.
   */
  private readOnForBill(): boolean {
    const s = this.s
    if (!s.responseStarted || s.streamed || s.ctx.shape.stream || !s.json || s.upstreamStatus < 200 || s.upstreamStatus >= 300) return false
    s.clientLeftFirst = true
    this.forward = (chunk) => this.meterOnly(chunk)
    this.left?.add(this)
    // Held back for the client's full socket, which will not drain now.
    this.resume?.()
    return true
  }

  /** A chunk of an answer read on after its client left: metered, after what is still pending. */
  private meterOnly(chunk: Buffer): boolean {
    const s = this.s
    s.lastData = performance.now()
    s.drainTap?.()
    s.tap?.write(chunk)
    return true
  }

  /** Ends an answer read on after its client left, recorded 499 with what came of it. */
  private endReadOn(): void {
    this.left?.delete(this)
    this.finish(this.s)
  }

  /** Burnrate is stopping: an answer read on after its client left is not waited for. */
  stop(): void {
    this.endReadOn()
    this.s.abort?.()
  }

  /** Nothing came for upstream.idle_timeout_ms: the call fails (504), or, read on after its client left, ends as the 499 it is. */
  stalled(detail: string): void {
    if (this.s.clientLeftFirst) this.endReadOn()
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
      this.held = new HeldAnswer()
      this.startHeld = (parts, rewritten, broken) => {
        this.held = null
        if (rewritten) {
          h.client.delete('transfer-encoding')
          h.client.set('content-length', String(parts[0].length))
        }
        // Sent knowing the answer broke after the provider had answered (a Message Batch
        // created): an SDK that sends a POST again when its answer breaks part-way (Anthropic's
        // TypeScript SDK from 1.17) is told not to, as the provider says on answers it knows
        // must not be repeated; the batch would be created, and billed, twice. A GET is repeated
        // harmlessly, so it is left to the SDK.
        if (broken && !IDEMPOTENT.has(this.req.method ?? '')) h.client.set('x-should-retry', 'false')
        const send = respond(this, status, h, resume, t)
        this.forward = send
        for (const p of parts) send(p)
      }
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
      if (!held.push(chunk)) this.startHeld!(held.take(), false)
      return true
    }
    const forward = this.forward
    if (!forward) return true
    return forward(chunk)
  }

  onComplete(trailers: string[] | null): void {
    const s = this.s
    if (s.done) return
    if (s.clientLeftFirst) return this.endReadOn()
    for (const x of s.timers) deadlines.cancel(x)
    const held = this.held
    if (held && this.relink) {
      const whole = held.whole()
      let out: string | null = null
      try {
        out = this.relink(whole.toString('utf8'), clientBase(this.req, s.route))
      } catch {
        // an answer that cannot be rewritten goes as it came
      }
      // Unchanged, it goes byte for byte as it came.
      this.startHeld!([out === null ? whole : Buffer.from(out)], true)
    }
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
    const held = this.held
    if (held) this.startHeld!(held.take(), false, true)
  }

  onError(err: Error): void {
    const s = this.s
    if (s.done) return
    // Cut while read on after its client left: the 499 it is, with what came.
    if (s.clientLeftFirst) return this.endReadOn()
    this.sendHeld()
    if (!this.retried && !this.answered && !s.responseStarted && IDEMPOTENT.has(this.req.method ?? '') && closedWhileIdle(err) && (this.body === null || Buffer.isBuffer(this.body))) {
      // A kept-alive connection the upstream had already closed (nginx, uvicorn and load
      // balancers close idle ones without saying when): nothing of the answer came, so a call
      // that may be repeated (a GET: a list of models, a response read again) is sent once
      // more, on a fresh connection. Never a POST: the upstream may have had it whole and
      // billed it before the connection dropped, and a second one would be billed again and
      // recorded nowhere; the client gets the 502 and decides (the agents' SDKs retry it, and
      // that call is recorded). Nor a body streamed upstream: what of it was sent is gone.
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

/** Methods a client may send again without asking for the effect twice (RFC 9110, 9.2.2). */
const IDEMPOTENT = new Set(['GET', 'HEAD', 'OPTIONS', 'PUT', 'DELETE', 'TRACE'])

/**
 * True when a request failed because the connection it was written to had been closed by the
 * upstream, and that connection had served earlier calls (it was a reused keep-alive one).
 */
export function closedWhileIdle(err: Error): boolean {
  const e = err as Error & { code?: string; socket?: { bytesRead?: number } }
  return e.code === 'UND_ERR_SOCKET' && (e.socket?.bytesRead ?? 0) > 0
}
