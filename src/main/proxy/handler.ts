import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Duplex } from 'node:stream'
import type { Dispatcher } from 'undici'
import { performance } from 'node:perf_hooks'
import type { SessionInference } from '../agents/sessions'
import { sendError } from '../http/errors'
import { dropUnreadBody } from '../http/unread-body'
import type { CallLedger as Ledger } from '../ledger/types'
import type { Logger } from '../log'
import type { Pricer } from '../pricing/price'
import { limitLabel, type TenantMapping } from './attribution'
import { admitHttp } from './call/admission'
import { describeCall } from './call/context'
import { type NetworkOptions, proxyRule, trustedCAs } from '../http/network'
import { createUpstreamDispatchers } from './call/dispatchers'
import { forwardHttp, type HeadersObserver } from './call/forward'
import { LeftAnswers } from './call/left-answers'
import { createCallLifecycle } from './call/lifecycle'
import type { RecorderOptions } from './call/recording'
import { audioUpload } from './call/audio-usage'
import { BodyMemory, BodyMemoryFull, BodyTooLarge, DEFAULT_MAX_REQUEST, readBody, readRequest } from './call/request-body'
import { RequestStream, type StreamedBody, streamsBody } from './call/request-stream'
import { type HttpCall, newHttpCall } from './call/state'
import type { CallGate } from './gate'
import type { Route } from './routes'
import { createWebSocketRelay } from './ws/relay'

export interface ProxyOptions {
  /** Groups calls that carry no session id into sessions (agent + key, 30-minute gap). */
  sessions?: SessionInference
  ledger: Ledger
  pricer: Pricer
  /** Read on every call, so budgets can be swapped in at runtime. */
  gate: () => CallGate
  tenants: readonly TenantMapping[]
  timeouts: { connect_timeout_ms: number; first_byte_timeout_ms: number; idle_timeout_ms: number }
  /** Largest request body read whole (a model call's), in bytes; a body streamed upstream (request-stream.ts) has none. */
  maxRequestBytes?: number
  /** Where upstream connection problems are logged (once a minute per provider and cause). */
  log?: Logger
  /** How upstreams are reached: proxy, private CA (see ./call/dispatchers.ts). */
  network?: NetworkOptions
  /** Total of request bodies (and clients' WebSocket messages: ./ws/message-memory.ts) held in memory at once, in bytes; past it calls get a 503, sockets a 1013 close. */
  maxBufferedBytes?: number
  /** Sees every upstream answer's headers (the plans feature reads the vendors' meters there). */
  observeHeaders?: HeadersObserver
  /** A background response's final usage, for the call that created it (../pricing/background.ts). */
  settleBackground?: RecorderOptions['settleBackground']
  /** Sees a plan's meter an answer's body carried (Gemini Code Assist's quotas). */
  observeReading?: RecorderOptions['observeReading']
  /** The requests a Batch API's results file held, each recorded once (../batch/record.ts). */
  recordBatch?: RecorderOptions['recordBatch']
}

/**
 * The hot path: forwards one call upstream with undici (a keep-alive Pool per upstream;
 * bodies, compressed or not, pass as they came), streams the response to the client chunk
 * by chunk while a tap meters a decoded copy, and records the call when it ends.
 * Proxied calls never pass through express. The steps live in ./call/: context (what the call
 * is, who spends it), lifecycle (admission, recording), forward and response (upstream and back),
 * failure (what an error means), recording (the ledger row).
 */
export interface ProxyHandler {
  handle(req: IncomingMessage, res: ServerResponse, route: Route): Promise<void>
  /** A WebSocket upgrade of a proxied path: passed through to the upstream (ws/relay.ts). */
  upgrade(req: IncomingMessage, socket: Duplex, head: Buffer, route: Route): void
  /** Calls under way (request received, not yet recorded). */
  readonly active: number
  /** Resolves when every call under way has been recorded, or after `timeoutMs`. */
  drain(timeoutMs: number): Promise<boolean>
  /** Closes the upstream connections (at shutdown, after draining). */
  close(): Promise<void>
  /**
   * Ends the calls whose non-streamed answers are still read for their bill after their client
   * left (call/left-answers.ts), recorded 499 with what came: a stop past its grace ends them as it
   * cuts the client connections.
   */
  stopLeftAnswers(): void
}

/** The answer of a call turned away before it was under way. */
const DONE: Promise<void> = Promise.resolve()

export function createProxyHandler(opts: ProxyOptions): ProxyHandler {
  const maxBody = opts.maxRequestBytes ?? DEFAULT_MAX_REQUEST
  const memory = new BodyMemory(opts.maxBufferedBytes ?? 5 * DEFAULT_MAX_REQUEST)
  const life = createCallLifecycle({ ...opts, warn: opts.log ? (m) => opts.log!.warn(m) : undefined })
  const dispatchers = createUpstreamDispatchers({ ...opts.timeouts, ...opts.network })
  const left = new LeftAnswers()
  const warn = opts.log ? onceAMinute(opts.log) : undefined
  // WebSocket upstreams trust the same CAs and go through the same proxy as HTTP calls.
  const network = opts.network ?? {}
  const sockets = createWebSocketRelay({ life, who: opts, pricesReady: () => opts.pricer.ready(), timeouts: opts.timeouts, maxFrameBytes: maxBody, memory, ca: trustedCAs(network), proxy: proxyRule(network), observeHeaders: opts.observeHeaders, warn })

  // What every call's promise ends with: made once, not per call.
  const leave = (): void => life.leave()
  const leaveFailed = (err: unknown): never => {
    life.leave()
    throw err
  }
  /** A new connection to each upstream, for sending a call again (call/retry.ts): one function per upstream, not per call. */
  const fresh = new WeakMap<Route['upstream'], () => Dispatcher>()
  const freshFor = (upstream: Route['upstream']): (() => Dispatcher) => {
    let f = fresh.get(upstream)
    if (!f) fresh.set(upstream, (f = () => dispatchers.fresh(upstream)))
    return f
  }

  /** Not an async function: a call's own promise is `receive`'s, with no second one (and its await) around it. */
  function handle(req: IncomingMessage, res: ServerResponse, route: Route): Promise<void> {
    try {
      const started = performance.now()
      const ts = Date.now()
      const upstream = route.upstream
      const provider = upstream.provider
      // Refused on its headers: the body is read only so far (../http/unread-body.ts).
      if (!upstream.enabled) {
        sendError(res, 'not_found', `The ${provider.name} provider is turned off in the config (providers.${provider.name}.enabled).`)
        dropUnreadBody(req)
        return DONE
      }
      if (!upstream.baseUrl) {
        sendError(res, 'not_found', `The ${provider.name} provider has no upstream: ${provider.noUpstreamHint ?? `set providers.${provider.name}.base_url in the config`}.`)
        dropUnreadBody(req)
        return DONE
      }
      // Under way from here, not only once its body is in: a shutdown lets a call whose body is
      // still arriving finish (drain). `begin` counts it again before this count is let go, so
      // the count never touches 0 in between; every way out lets it go exactly once.
      life.arrive()
      // (`receive` is async: it never throws, it rejects.)
      return receive(req, res, route, started, ts).then(leave, leaveFailed)
    } catch (err) {
      // As an async function's would: a failure is the promise's, never thrown at the caller.
      return Promise.reject(err)
    }
  }

  /** Reads the body (and waits for prices), then begins the call, admits it and forwards it. */
  async function receive(req: IncomingMessage, res: ServerResponse, route: Route, started: number, ts: number): Promise<void> {
    // A body metering does not read (a file upload, a Message Batch's requests) is not read here.
    if (streamsBody(route, req)) return receiveStreamed(req, res, route, started, ts)
    const upstream = route.upstream
    // Until the prices are ready (the price library loaded a moment after start-up, the cached
    // newer data applied), a call waits for them while its body comes: its admission and its
    // recording price it (../pricing/library.ts).
    const prices = opts.pricer.isReady ? null : opts.pricer.ready()
    let body: Buffer | null
    let request: { parsed: any; bytes: number }
    try {
      body = await readBody(req, maxBody, memory)
      // The body's memory is given back when the call is over (answered, failed or abandoned).
      if (body) {
        const held = body.length
        if (res.closed) memory.give(held)
        else res.on('close', () => memory.give(held))
      }
      if (res.destroyed) return
      const read = readRequest(body, req.headers, maxBody, memory)
      if (read instanceof Promise) {
        request = await read
        if (res.destroyed) return
      } else request = read
    } catch (err) {
      if (err instanceof BodyTooLarge) {
        sendError(res, 'payload_too_large', `The request body is larger than ${maxBody} bytes${err.decoded ? ' once decompressed' : ''}.`)
        // Recorded like every refusal: who sent what, never sent upstream, cost 0.
        const { info, ctx } = describeCall(route, req.method ?? 'GET', req.headers, undefined, Number(req.headers['content-length']) || 0, ts, opts)
        const s = life.begin(newHttpCall(route, ctx, info, started, res))
        s.status = 413
        s.error = 'payload_too_large'
        life.finish(s)
      } else if (err instanceof BodyMemoryFull) {
        sendError(
          res,
          'service_unavailable',
          `Burnrate is holding ${Math.round(memory.limit / 1048576)} MB of request bodies already (server.max_buffered_body_mb); retry in a moment.`,
          undefined,
          { 'retry-after': '1' },
        )
        // Its body is not held: read and dropped only so far, the connection closed past that
        // (../http/unread-body.ts). Closed at once, its body unread, the client still sending had its
        // connection reset, which may take the answer with it.
        dropUnreadBody(req)
      } else {
        res.destroy()
      }
      return
    }
    if (prices && !(await pricesIn(prices, res))) return
    const { info, ctx } = describeCall(route, req.method ?? 'GET', req.headers, request.parsed, request.bytes, ts, opts)

    const s = life.begin(newHttpCall(route, ctx, info, started, res))
    if (body && ctx.shape.endpoint === 'audio') s.upload = audioUpload(body, req.headers)
    const admitted = admitHttp(life, s)
    if (admitted === true) forward(s, req, body, upstream)
    else if (admitted !== false) void admitted.then((ok) => ok && forward(s, req, body, upstream))
  }

  /**
   * A call whose body goes upstream as it comes (./call/request-stream.ts): begun and admitted on
   * its headers, as a call read whole is on its body (its size as Content-Length states it), and
   * its body's bytes, and a form's text fields, taken into its record once they have passed.
   */
  async function receiveStreamed(req: IncomingMessage, res: ServerResponse, route: Route, started: number, ts: number): Promise<void> {
    const prices = opts.pricer.isReady ? null : opts.pricer.ready()
    // A call answered before its body went anywhere (no prices, refused, the client gone): the
    // body is read only so far (../http/unread-body.ts). Left to Node, which reads the body of a
    // request answered with it unread to its end to keep the connection, an upload of any size
    // was taken in whole, to be dropped.
    if (prices && !(await pricesIn(prices, res))) return dropUnreadBody(req)
    if (res.destroyed) return dropUnreadBody(req)
    const { info, ctx } = describeCall(route, req.method ?? 'GET', req.headers, undefined, Number(req.headers['content-length']) || 0, ts, opts)
    const s = life.begin(newHttpCall(route, ctx, info, started, res))
    const admitted = admitHttp(life, s)
    if (admitted === true) forwardStreamed(s, req)
    else if (admitted === false) dropUnreadBody(req)
    else void admitted.then((ok) => (ok ? forwardStreamed(s, req) : dropUnreadBody(req)))
  }

  function forwardStreamed(s: HttpCall, req: IncomingMessage): void {
    forward(s, req, new RequestStream(req, (b) => passed(s, b), s.res), s.route.upstream)
  }

  /** Waits for the price data; false when the call is over (the data could not be loaded: answered so; or the client left). */
  async function pricesIn(prices: Promise<void>, res: ServerResponse): Promise<boolean> {
    try {
      await prices
    } catch (err) {
      opts.log?.error(`the price library could not be loaded: ${(err as Error).message}`)
      sendError(res, 'internal', 'Burnrate could not load its price data, so it cannot meter this call; the details are in its log.')
      return false
    }
    return !res.destroyed
  }

  function forward(s: HttpCall, req: IncomingMessage, body: Buffer | RequestStream | null, upstream: Route['upstream']): void {
    forwardHttp(s, req, body, dispatchers.for(upstream), opts.timeouts, life.finish, warn, opts.observeHeaders, freshFor(upstream), left)
  }

  return {
    handle,
    upgrade: sockets.upgrade,
    close: () => {
      sockets.close()
      return dispatchers.close()
    },
    get active() {
      return life.active
    },
    drain: (timeoutMs) => life.drain(timeoutMs),
    stopLeftAnswers: () => left.stopAll(),
  }
}

/**
 * A streamed body has passed: the call's record takes its size, and a form's text fields as its
 * body, as a form read whole gives them (the model they name, where its path named none).
 */
function passed(s: HttpCall, body: StreamedBody): void {
  s.ctx.bodyBytes = body.bytes
  if (!body.fields || s.done) return
  s.info.body = s.ctx.body = body.fields
  if (s.ctx.shape.model) return
  const model = s.ctx.provider.inspect(s.info).model
  if (model) s.ctx.shape.model = limitLabel(model)
}

/** Logs each distinct line at most once a minute, so a provider that is down does not flood the log. */
function onceAMinute(log: Logger): (line: string) => void {
  const last = new Map<string, number>()
  return (line) => {
    const now = Date.now()
    if ((last.get(line) ?? -Infinity) > now - 60_000) return
    if (last.size > 256) last.clear()
    last.set(line, now)
    log.warn(`upstream: ${line}`)
  }
}
