import type { IncomingHttpHeaders } from 'node:http'
import type { ClientHeaders } from '../headers'
import type { Meter } from '../../providers/types'
import { performance } from 'node:perf_hooks'
import { BodyTap, JsonCollector } from '../../metering/body-tap'
import { EventStreamReader } from '../../metering/event-stream'
import { JsonLines } from '../../metering/json-lines'
import { SseParser } from '../../metering/sse'
import { deadlines } from './deadlines'
import { attachHtmlAnswerMeter } from './html-answer'
import { isJson } from './request-body'
import type { CallState, HttpCall } from './state'

/**
 * Sets up metering of a successful answer (or with `meter`, of a refusal the provider reads:
 * Provider.refusalMeter): an SSE parser for a stream (AWS's event stream reader for Bedrock's), a JSON collector for a
 * body, a line splitter for a JSON Lines results file, behind a tap that decodes a compressed body for metering only.
 */
export function attachMeter(s: CallState, uheaders: IncomingHttpHeaders, meter: Meter = s.ctx.provider.meter(s.ctx.shape, s.info)): void {
  const ctype = uheaders['content-type']
  s.meter = meter
  if (meter.headers) meter.headers(uheaders)
  let sink: ((b: Buffer) => void) | null = null
  if (s.ctx.shape.lines && meter.line) {
    // A results file's requests are recorded a set at a time as its lines pass (the rest when it ends: ./recording.ts).
    const recordBatch = s.recordBatch
    if (recordBatch) meter.onBatchResults = (results) => recordBatch(s, results)
    const long = meter.longLinePaths && meter.lineObject ? { paths: meter.longLinePaths, onObject: (o: Record<string, unknown>) => meter.lineObject!(o) } : undefined
    const lines = new JsonLines((text) => meter.line!(text), undefined, long)
    s.lines = lines
    sink = lines.push
  } else if (s.streamed && isEventStream(ctype)) {
    // AWS's binary event stream (Bedrock): each message's event type and payload, as an SSE event's.
    const reader = new EventStreamReader((e, d) => meter.event(e, d))
    s.sse = reader
    sink = (b) => reader.write(b)
  } else if (s.streamed) {
    const parser = new SseParser((e, d) => meter.event(e, d))
    s.sse = parser
    sink = (b) => parser.write(b)
  } else if (isJson(ctype) || !ctype) {
    s.json = new JsonCollector(undefined, undefined, meter.largeJsonPaths)
    sink = s.json.push
  }
  if (sink) {
    const enc = uheaders['content-encoding']
    s.tap = new BodyTap(typeof enc === 'string' ? enc : undefined, sink)
  }
}

/**
 * Upstream answered: sends the status and headers on, sets up metering and the idle timeout,
 * and returns what forwards each body chunk (false = pause until the client's socket drains;
 * `resume` is called then).
 */
export function startHttpResponse(
  s: HttpCall,
  status: number,
  uheaders: IncomingHttpHeaders,
  /** What the client gets of them (clientResponseHeaders(uheaders) as a flat list, read in the same pass: ../headers.ts). */
  headers: ClientHeaders,
  resume: () => void,
  idleMs: number,
  onIdle: (detail: string) => void,
): (chunk: Buffer) => boolean {
  const res = s.res
  s.responseStarted = true
  s.status = status
  s.upstreamStatus = status
  const ctype = uheaders['content-type']
  s.streamed = typeof ctype === 'string' && (ctype.includes('text/event-stream') || isEventStream(ctype))
  // Trailers are forwarded (dispatch-handler.ts), so the header announcing them is too.
  if (uheaders.trailer) headers.set('trailer', uheaders.trailer)
  if (s.admission.headers) setAll(headers, s.admission.headers)
  // A check the gate let run after the dispatch (runaway, warn) runs now if it has not yet.
  if (s.admission.lateHeaders) setAll(headers, s.admission.lateHeaders())
  writeHead(res, s.status, headers)

  // Only a successful answer is a model's: a redirect or any other 1xx-3xx ran none (its missing
  // usage is not a stream cut before it, which the recorder would estimate and charge). Nor does
  // a web page: a captive portal's sign-in, a proxy's block page or a base_url that names a web
  // site answers 200 text/html; passed on, recorded at $0, never estimated. A model's answer a
  // gateway labels text/html is priced from its usage all the same (./html-answer.ts).
  let html = false
  if (s.status >= 200 && s.status < 300) {
    if (isHtml(ctype)) {
      html = true
      attachHtmlAnswerMeter(s, uheaders)
    } else attachMeter(s, uheaders)
  } else if (s.status >= 400) {
    // A refusal whose body tells of the plan (Code Assist's 429 for a used-up quota): read for that alone.
    const refusal = s.ctx.provider.refusalMeter?.(s.status, s.ctx.shape, s.info)
    if (refusal) attachMeter(s, uheaders, refusal)
  }

  // Not a timer reset per chunk (that adds up over a long stream): each chunk notes its
  // time; when the timer fires it re-arms for what is left of the window after the latest
  // chunk, and fails the call only when nothing came for the whole window.
  s.lastData = performance.now()
  // While the client's socket is full, the upstream is held back by us, not silent: that time
  // is the client's (a slow reader is not a stalled upstream), and the call goes on until the
  // client reads or hangs up.
  let waitingOnClient = false
  const check = (): void => {
    const quiet = performance.now() - s.lastData
    if (quiet < idleMs) {
      s.timers.push(deadlines.add(idleMs - quiet, check))
      return
    }
    // (A client that left is waited on no more: an answer read on for its bill is the upstream's to send: ./left-answers.ts.)
    if (waitingOnClient && !res.destroyed) {
      s.timers.push(deadlines.add(idleMs, check))
      return
    }
    onIdle(`no data for ${idleMs} ms`)
  }
  s.timers.push(deadlines.add(idleMs, check))
  const tap = s.tap
  const onDrain = (): void => {
    waitingOnClient = false
    s.lastData = performance.now()
    resume()
  }
  // A stream's chunks (and a compressed body's, and a results file's lines) are metered on the tick after they are written:
  // Node holds what res.write() takes in the corked socket until its own tick, so metering them
  // here (parsing a stream's events, inflating) would run before the bytes leave. The tick comes
  // after Node's: the chunks of one read are sent in one write, then metered, in order. A plain
  // JSON body is only collected (nothing to gain). The recorder meters what is still pending
  // before it reads the meter (s.drainTap), so every chunk is metered once, however the call ends.
  let pending: Buffer[] | null = null
  const drain = (): void => {
    const p = pending
    pending = null
    if (p && tap) for (const c of p) tap.write(c)
  }
  // (An answer labelled text/html is metered as a stream is: it may be one.)
  const later = !!tap && (s.streamed || tap.decoding || !!s.lines || html)
  if (later) s.drainTap = drain
  // One step both forwards and meters, with backpressure (pause until the client's socket drains).
  // The chunk goes to the client first: metering it is not in its way.
  return (chunk) => {
    s.lastData = performance.now()
    const sent = res.write(chunk)
    if (later) {
      if (pending) pending.push(chunk)
      else {
        pending = [chunk]
        process.nextTick(drain)
      }
    } else if (tap) {
      tap.write(chunk)
    }
    if (!sent && !res.destroyed) {
      waitingOnClient = true
      res.once('drain', onDrain)
      return false
    }
    return true
  }
}

/**
 * Writes the answer's status and headers. Node refuses (throws) a `Trailer` header on an answer it
 * does not send in chunks: to an HTTP/1.0 client, to a HEAD request, with a length (a rewritten
 * answer's). There the trailers cannot follow (Node leaves them out), so neither does the header
 * that announces them; the answer itself goes on (it was lost, its usage with it).
 */
function writeHead(res: HttpCall['res'], status: number, headers: ClientHeaders): void {
  try {
    res.writeHead(status, headers.list)
  } catch (err) {
    if ((err as { code?: string }).code !== 'ERR_HTTP_TRAILER_INVALID') throw err
    headers.delete('trailer')
    res.writeHead(status, headers.list)
  }
}

/** Burnrate's own headers (budget warnings...) on the answer: each replaces one the upstream sent under that name. */
function setAll(headers: ClientHeaders, add: Record<string, string> | undefined): void {
  if (add) for (const name in add) headers.set(name, add[name])
}

/** A web page's content type (`text/html`, any case, any parameters). */
function isHtml(ctype: string | string[] | undefined): boolean {
  return typeof ctype === 'string' && /^\s*text\/html\b/i.test(ctype)
}

/** AWS's event stream encoding (Bedrock's streamed answers). */
function isEventStream(ctype: string | string[] | undefined): boolean {
  return typeof ctype === 'string' && ctype.includes('application/vnd.amazon.eventstream')
}
