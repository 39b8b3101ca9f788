import type { IncomingHttpHeaders, IncomingMessage } from 'node:http'
import type { Dispatcher } from 'undici'
import { anthropicKeyToApiKey } from '../anthropic-key-header'
import { upstreamRequestHeaders } from '../headers'
import { Forwarding } from './dispatch-handler'
import type { LeftAnswers } from './left-answers'
import type { RequestStream } from './request-stream'
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
