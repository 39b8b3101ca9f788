import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http'
import { performance } from 'node:perf_hooks'
import { type Dispatcher, Pool } from 'undici'
import { detectAgent } from '../agents/detect'
import type { SessionInference } from '../agents/sessions'
import { errorBody, sendError } from '../http/errors'
import type { Ledger } from '../ledger/ledger'
import { type CallRecord, STATUS_CLIENT_CLOSED } from '../ledger/record'
import { BodyTap, JsonCollector } from '../metering/body-tap'
import { counterFor, estimateUsage } from '../metering/estimate'
import { SseParser } from '../metering/sse'
import { emptyUsage, type Usage } from '../metering/usage'
import type { Pricer } from '../pricing/price'
import type { CallShape, Meter, RequestInfo } from '../providers/types'
import { extractApiKey, hashKey, keyHint, type TenantMapping, tenantFor } from './attribution'
import type { Admission, CallContext, CallGate } from './gate'
import { clientResponseHeaders, parseRawHeaders, upstreamRequestHeaders } from './headers'
import { type Route, type Upstream, upstreamPath } from './routes'

export interface ProxyOptions {
  /** Groups calls that carry no session id into sessions (agent + key, 30-minute gap). */
  sessions?: SessionInference
  ledger: Ledger
  pricer: Pricer
  /** Read on every call, so budgets can be swapped in at runtime. */
  gate: () => CallGate
  tenants: readonly TenantMapping[]
  timeouts: { connect_timeout_ms: number; first_byte_timeout_ms: number; idle_timeout_ms: number }
  /** Largest request body accepted, in bytes. */
  maxRequestBytes?: number
}

const DEFAULT_MAX_REQUEST = 100 * 1024 * 1024

class BodyTooLarge extends Error {}

function readBody(req: IncomingMessage, limit: number): Promise<Buffer | null> {
  const len = req.headers['content-length']
  if (len === undefined && req.headers['transfer-encoding'] === undefined) return Promise.resolve(null)
  if (len !== undefined && Number(len) > limit) return Promise.reject(new BodyTooLarge())
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    let size = 0
    req.on('data', (c: Buffer) => {
      size += c.length
      if (size > limit) {
        req.removeAllListeners('data')
        req.resume()
        reject(new BodyTooLarge())
        return
      }
      chunks.push(c)
    })
    req.on('end', () => resolve(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, size)))
    req.on('error', reject)
  })
}

function isJson(contentType: string | undefined): boolean {
  return !!contentType && /[/+]json\b/i.test(contentType)
}

interface CallState {
  res: ServerResponse
  route: Route
  ctx: CallContext
  info: RequestInfo
  admission: Admission
  started: number
  /** Aborts the upstream call once it is on a connection; until then `done` keeps it from being sent. */
  abort?: (err?: Error) => void
  status: number
  error: string | null
  responseStarted: boolean
  streamed: boolean
  meter?: Meter
  tap?: BodyTap
  sse?: SseParser
  json?: JsonCollector
  done: boolean
  timers: NodeJS.Timeout[]
  /** When the last response chunk came (performance.now()). */
  lastData: number
}

/**
 * The hot path: forwards one call upstream with undici (a keep-alive Pool per upstream;
 * bodies, compressed or not, pass as they came), streams the response to the client chunk
 * by chunk while a tap meters a decoded copy, and records the call when it ends.
 * Proxied calls never pass through express.
 */
export interface ProxyHandler {
  handle(req: IncomingMessage, res: ServerResponse, route: Route): Promise<void>
  /** Calls under way (request received, not yet recorded). */
  readonly active: number
  /** Resolves when every call under way has been recorded, or after `timeoutMs`. */
  drain(timeoutMs: number): Promise<boolean>
  /** Closes the upstream connections (at shutdown, after draining). */
  close(): Promise<void>
}

export function createProxyHandler(opts: ProxyOptions): ProxyHandler {
  const maxBody = opts.maxRequestBytes ?? DEFAULT_MAX_REQUEST
  let active = 0
  let idleWaiters: (() => void)[] = []
  // One keep-alive connection pool per upstream. Its own timeouts are off but the connect one:
  // the first-byte and idle timeouts below are the call's.
  const pools = new Map<Upstream, Pool>()
  function poolFor(u: Upstream): Pool {
    let p = pools.get(u)
    if (!p) {
      p = new Pool(u.origin, {
        keepAliveTimeout: 30_000,
        headersTimeout: 0,
        bodyTimeout: 0,
        connect: { timeout: opts.timeouts.connect_timeout_ms },
      })
      pools.set(u, p)
    }
    return p
  }

  function release(): void {
    active--
    if (active === 0) {
      const w = idleWaiters
      idleWaiters = []
      for (const f of w) f()
    }
  }

  /**
   * Records a call once, when it ends. Synchronous for the usual call (a plain or already
   * decoded body whose usage the provider reported); only a compressed body still being
   * inflated, or a cut stream whose usage must be estimated, waits for a promise.
   */
  function finish(s: CallState): void {
    if (s.done) return
    s.done = true
    for (const t of s.timers) clearTimeout(t)
    const latency = performance.now() - s.started
    const tap = s.tap
    if (tap?.decoding) {
      tap.end().then(
        () => meter(s, latency),
        () => meter(s, latency),
      )
    } else {
      meter(s, latency)
    }
  }

  /** Reads what the meter found; estimates what a cut stream did not report. */
  function meter(s: CallState, latency: number): void {
    let usage: Usage | null = null
    let model = s.ctx.shape.model
    try {
      if (s.sse) s.sse.end()
      if (s.json && s.meter) {
        const body = s.json.parse()
        if (body !== undefined) s.meter.json(body)
      }
      const r = s.meter?.result()
      if (r) {
        usage = r.usage
        if (r.model) model = r.model
        // A meter exists only for a successful upstream answer; if the stream was then cut (client
        // gone, upstream reset or stalled), what was generated was billed all the same.
        if (!usage && s.ctx.shape.billable && s.responseStarted) {
          const m = model
          estimateUsage(m, s.info.body, r.outputText ?? '').then(
            (u) => record(s, latency, u, m, true),
            () => record(s, latency, null, m, false),
          )
          return
        }
      }
    } catch {
      // A response we cannot read is still recorded, with what is known.
    }
    record(s, latency, usage, model, false)
  }

  function record(s: CallState, latency: number, usage: Usage | null, model: string, estimated: boolean): void {
    try {
      const u = usage ?? emptyUsage()
      let cost = 0
      let priced = true
      const hasTokens = u.input_tokens + u.output_tokens > 0
      if (hasTokens) {
        const p = opts.pricer.price(s.route.upstream.provider.pricingId, s.ctx.provider.name, model, u, new Date(s.ctx.ts))
        cost = p.cost_usd
        priced = p.priced
      }
      try {
        s.admission.settle?.(cost)
      } finally {
        const call: CallRecord = {
          ts: s.ctx.ts,
          provider: s.ctx.provider.name,
          model,
          endpoint: s.ctx.shape.endpoint,
          api_key_hash: s.ctx.apiKeyHash,
          key_hint: s.ctx.keyHint,
          tenant: s.ctx.tenant,
          agent: s.ctx.agent,
          session: s.ctx.session,
          status: s.status,
          streamed: s.streamed,
          input_tokens: u.input_tokens,
          output_tokens: u.output_tokens,
          cache_read_tokens: u.cache_read_tokens,
          cache_write_tokens: u.cache_write_tokens,
          cache_write_1h_tokens: u.cache_write_1h_tokens,
          reasoning_tokens: u.reasoning_tokens,
          cost_usd: cost,
          priced,
          estimated,
          latency_ms: latency,
          error: s.error,
        }
        opts.ledger.record(call)
      }
    } catch {
      // Never an exception out of here (it would reach an event handler and stop the process):
      // the row is already recorded when what follows it fails, and a ledger closed at shutdown
      // takes no more calls.
    } finally {
      release()
    }
  }

  function fail(s: CallState, kind: 'unreachable' | 'timeout' | 'reset', detail: string): void {
    if (s.done) return
    const host = s.route.upstream.host
    if (!s.responseStarted) {
      s.status = kind === 'timeout' ? 504 : 502
      s.error = kind === 'timeout' ? 'upstream_timeout' : 'upstream_unreachable'
      if (kind === 'timeout') {
        sendError(s.res, 'upstream_timeout', `${s.ctx.provider.name} (${host}) did not answer in time: ${detail}.`)
      } else {
        sendError(s.res, 'upstream_unreachable', `Could not reach ${s.ctx.provider.name} at ${host}: ${detail}.`)
      }
    } else {
      // Headers are out: the only honest signal left is to cut the client's stream.
      s.status = kind === 'timeout' ? 504 : 502
      s.error = kind === 'timeout' ? 'upstream_stalled' : 'upstream_reset'
      s.res.destroy()
    }
    finish(s)
  }

  /**
   * Upstream answered: sends the status and headers on, sets up metering, and returns what
   * forwards each body chunk (false = pause until the client's socket drains).
   */
  function onResponse(s: CallState, status: number, uheaders: IncomingHttpHeaders, resume: () => void): (chunk: Buffer) => boolean {
    const res = s.res
    s.responseStarted = true
    s.status = status
    const ctype = uheaders['content-type']
    s.streamed = typeof ctype === 'string' && ctype.includes('text/event-stream')
    const headers = clientResponseHeaders(uheaders)
    if (s.admission.headers) Object.assign(headers, s.admission.headers)
    res.writeHead(s.status, headers)

    if (s.status < 400) {
      const meter = s.ctx.provider.meter(s.ctx.shape, s.info)
      s.meter = meter
      let sink: ((b: Buffer) => void) | null = null
      if (s.streamed) {
        const parser = new SseParser((e, d) => meter.event(e, d))
        s.sse = parser
        sink = (b) => parser.write(b)
      } else if (isJson(ctype) || !ctype) {
        s.json = new JsonCollector()
        sink = s.json.push
      }
      if (sink) {
        const enc = uheaders['content-encoding']
        s.tap = new BodyTap(typeof enc === 'string' ? enc : undefined, sink)
      }
    }

    const idle = opts.timeouts.idle_timeout_ms
    // Not a timer reset per chunk (that adds up over a long stream): each chunk notes its
    // time; when the timer fires it re-arms for what is left of the window after the latest
    // chunk, and fails the call only when nothing came for the whole window.
    s.lastData = performance.now()
    const onIdle = (): void => {
      const quiet = performance.now() - s.lastData
      if (quiet < idle) {
        s.timers.push(setTimeout(onIdle, idle - quiet))
        return
      }
      fail(s, 'timeout', `no data for ${idle} ms`)
      s.abort?.()
    }
    s.timers.push(setTimeout(onIdle, idle))
    const tap = s.tap
    const onDrain = (): void => {
      resume()
    }
    // One step both meters and forwards, with backpressure (pause until the client's socket drains).
    return (chunk) => {
      s.lastData = performance.now()
      if (tap) tap.write(chunk)
      if (!res.write(chunk) && !res.destroyed) {
        res.once('drain', onDrain)
        return false
      }
      return true
    }
  }
  async function handle(req: IncomingMessage, res: ServerResponse, route: Route): Promise<void> {
    const started = performance.now()
    const ts = Date.now()
    const upstream = route.upstream
    const provider = upstream.provider
    if (!upstream.enabled) {
      sendError(res, 'not_found', `The ${provider.name} provider is turned off in the config (providers.${provider.name}.enabled).`)
      return
    }
    if (!upstream.baseUrl) {
      sendError(res, 'not_found', `The ${provider.name} provider has no upstream: set providers.${provider.name}.base_url in the config.`)
      return
    }

    let body: Buffer | null
    try {
      body = await readBody(req, maxBody)
      if (res.destroyed) return
    } catch (err) {
      if (err instanceof BodyTooLarge) {
        sendError(res, 'payload_too_large', `The request body is larger than ${maxBody} bytes.`)
      } else {
        res.destroy()
      }
      return
    }
    let parsed: any
    if (body && body.length > 0 && isJson(req.headers['content-type'])) {
      try {
        parsed = JSON.parse(body.toString('utf8'))
      } catch {
        parsed = undefined // passed through as sent: the provider answers it
      }
    }

    const info: RequestInfo = {
      method: req.method ?? 'GET',
      path: route.path,
      query: route.query,
      headers: req.headers,
      body: parsed,
    }
    const shape: CallShape = provider.inspect(info)
    // The tokenizer takes ~0.5 s to load the first time: start now, so the estimate is ready when the stream ends.
    if (shape.mayLackUsage) void counterFor(shape.model)
    const key = extractApiKey(req.headers, route.query)
    const who = detectAgent(req.headers, parsed)
    const apiKeyHash = hashKey(key)
    if (!who.session && opts.sessions) who.session = opts.sessions.assign(who.agent, apiKeyHash, ts)
    const ctx: CallContext = {
      provider,
      shape,
      apiKey: key,
      apiKeyHash,
      keyHint: keyHint(key),
      tenant: tenantFor(req.headers, key, opts.tenants),
      agent: who.agent,
      session: who.session,
      ts,
      body: parsed,
      bodyBytes: body?.length ?? 0,
    }

    active++
    const s: CallState = {
      route,
      ctx,
      info,
      admission: {},
      started,
      status: 0,
      error: null,
      responseStarted: false,
      streamed: false,
      done: false,
      timers: [],
      lastData: 0,
      res,
    }

    let admission: Admission
    try {
      admission = opts.gate().admit(ctx)
    } catch {
      s.status = 500
      s.error = 'gate_failed'
      sendError(res, 'internal', 'Burnrate could not check the budget for this call; it was not sent upstream.')
      finish(s)
      return
    }
    s.admission = admission
    if (admission.refuse) {
      const r = admission.refuse
      const text = JSON.stringify(r.body ?? errorBody('budget_exceeded', r.reason))
      res.writeHead(r.status, {
        ...r.headers,
        'content-type': 'application/json; charset=utf-8',
        'content-length': Buffer.byteLength(text),
      })
      res.end(text)
      s.status = r.status
      s.error = r.reason
      s.admission = { settle: admission.settle }
      finish(s)
      return
    }

    const headers = upstreamRequestHeaders(req.headers, upstream.host)
    // The body is already read whole: nothing to wait for a 100 Continue about (undici refuses the header).
    delete headers.expect
    if (body) {
      headers['content-length'] = String(body.length)
    }
    const t = opts.timeouts
    const firstByte = setTimeout(() => {
      fail(s, 'timeout', `no response within ${t.first_byte_timeout_ms} ms`)
      s.abort?.()
    }, t.first_byte_timeout_ms)
    s.timers.push(firstByte)

    res.on('close', () => {
      if (res.writableFinished) {
        finish(s)
        return
      }
      if (s.done) return
      // The client went away first: stop the upstream call and record what was metered.
      s.status = STATUS_CLIENT_CLOSED
      s.error = 'client_aborted'
      finish(s)
      s.abort?.()
    })

    let forward: ((chunk: Buffer) => boolean) | null = null
    const handler: Dispatcher.DispatchHandler = {
      onConnect(abort) {
        // Not sent at all when the call already ended while it waited for a connection.
        if (s.done) abort(new Error('call ended'))
        else s.abort = abort as (err?: Error) => void
      },
      onHeaders(status, raw, resume) {
        clearTimeout(firstByte)
        if (s.done) {
          s.abort?.()
          return false
        }
        forward = onResponse(s, status, parseRawHeaders(raw as unknown as Buffer[]), resume)
        return true
      },
      onData(chunk) {
        if (s.done || !forward) return true
        return forward(chunk)
      },
      onComplete() {
        if (s.done) return
        for (const x of s.timers) clearTimeout(x)
        res.end()
      },
      onError(err) {
        if (s.done) return
        const code = (err as NodeJS.ErrnoException).code
        if (code === 'UND_ERR_INVALID_ARG' && !s.responseStarted) {
          // e.g. a header value that cannot be sent
          s.status = 400
          s.error = 'invalid_request'
          sendError(res, 'invalid_request', `The request cannot be forwarded: ${err.message}.`)
          finish(s)
        } else if (code === 'UND_ERR_CONNECT_TIMEOUT') {
          fail(s, 'timeout', `no connection within ${t.connect_timeout_ms} ms`)
        } else if (s.responseStarted) {
          fail(s, 'reset', 'the connection was reset mid-response')
        } else {
          fail(s, 'unreachable', code && !code.startsWith('UND_ERR') ? code : err.message)
        }
      },
    }
    poolFor(upstream).dispatch(
      { origin: upstream.origin, method: req.method as Dispatcher.HttpMethod, path: upstreamPath(route), headers: headers as Record<string, string | string[]>, body },
      handler,
    )
  }

  return {
    handle,
    async close() {
      const all = [...pools.values()]
      pools.clear()
      await Promise.all(all.map((p) => p.destroy().catch(() => {})))
    },
    get active() {
      return active
    },
    drain(timeoutMs: number): Promise<boolean> {
      if (active === 0) return Promise.resolve(true)
      return new Promise((resolve) => {
        const timer = setTimeout(() => resolve(false), timeoutMs)
        idleWaiters.push(() => {
          clearTimeout(timer)
          resolve(true)
        })
      })
    },
  }
}
