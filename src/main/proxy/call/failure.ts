import { sendError } from '../../http/errors'
import { PROXY_REFUSAL, REACHED, describeNetworkError } from './network-errors'
import type { HttpCall } from './state'

export type FailureKind = 'unreachable' | 'timeout' | 'reset'

/**
 * What an upstream error means for the call: a request undici refuses to send, or a failure of
 * the upstream. `code` is the specific cause (ENOTFOUND, SELF_SIGNED_CERT_IN_CHAIN...), kept in
 * the ledger's error field; `detail` says it in words, with the fix.
 */
export type UpstreamFailure = { kind: 'invalid'; detail: string } | { kind: FailureKind; detail: string; code?: string }

export function classifyUpstreamError(err: Error, responseStarted: boolean, connectTimeoutMs: number, host = '', provider = ''): UpstreamFailure {
  const code = (err as NodeJS.ErrnoException).code
  // e.g. a header value that cannot be sent; not the proxy's 407 to a forwarded request, which undici says the same way
  if (code === 'UND_ERR_INVALID_ARG' && !responseStarted && !PROXY_REFUSAL.test(err.message)) return { kind: 'invalid', detail: err.message }
  if (code === 'UND_ERR_CONNECT_TIMEOUT') return { kind: 'timeout', detail: `no connection within ${connectTimeoutMs} ms` }
  // Only the proxy's answer to CONNECT has a headers timeout (./dispatchers.ts): the upstreams' is the call's first-byte one.
  if (code === 'UND_ERR_HEADERS_TIMEOUT' && !responseStarted) return { kind: 'timeout', detail: `no connection within ${connectTimeoutMs} ms (the proxy did not answer its CONNECT request)` }
  if (responseStarted) return { kind: 'reset', detail: 'the connection was reset mid-response' }
  const known = describeNetworkError(err, host, provider)
  if (known) return { kind: 'unreachable', detail: known.words, code: known.code }
  return { kind: 'unreachable', detail: code && !code.startsWith('UND_ERR') ? code : err.message, code: code && !code.startsWith('UND_ERR') ? code : undefined }
}

/** The status and error recorded for a failure, before or after the response started. */
export function failureOutcome(kind: FailureKind, responseStarted: boolean, code?: string): { status: number; error: string } {
  const status = kind === 'timeout' ? 504 : 502
  if (!responseStarted) {
    const error = kind === 'timeout' ? 'upstream_timeout' : 'upstream_unreachable'
    return { status, error: code ? `${error}: ${code}` : error }
  }
  return { status, error: kind === 'timeout' ? 'upstream_stalled' : 'upstream_reset' }
}

/**
 * Ends an HTTP call the upstream failed: a clear error when nothing was sent yet, else a cut
 * stream. `warn` gets the same sentence for the log when the upstream could not be reached.
 */
export function failHttp(s: HttpCall, kind: FailureKind, detail: string, finish: (s: HttpCall) => void, code?: string, warn?: (line: string) => void): void {
  if (s.done) return
  const host = s.route.upstream.host
  const o = failureOutcome(kind, s.responseStarted, code)
  s.status = o.status
  s.error = o.error
  if (!s.responseStarted) {
    if (kind === 'timeout') {
      sendError(s.res, 'upstream_timeout', `${s.ctx.provider.name} (${host}) did not answer in time: ${detail}.`)
    } else {
      const message =
        // It was reached: it closed the connection, or answered with more headers than are taken, or what is not HTTP/1.1.
        code && REACHED.has(code) ? `${s.ctx.provider.name} (${host}) ${detail}.` : `Could not reach ${s.ctx.provider.name} at ${host}: ${detail}.`
      sendError(s.res, 'upstream_unreachable', message)
      warn?.(message)
    }
  } else {
    // Headers are out: the only honest signal left is to cut the client's stream.
    cutClient(s)
  }
  finish(s)
}

const CUT = Symbol('burnrate.cut')

/**
 * Cuts the client's connection for this call's sake. Calls pipelined behind it on the same
 * connection are lost with it: they are recorded as cut by Burnrate (`cutConnection`), not as
 * abandoned by their client.
 */
export function cutClient(s: HttpCall): void {
  const res = s.res
  // The request's socket: a pipelined response has none of its own until its turn comes.
  const socket = (res.req?.socket ?? res.socket) as (object & { [CUT]?: boolean }) | null
  if (socket) socket[CUT] = true
  if (res.destroyed || !res.headersSent) {
    res.destroy()
    return
  }
  // The answer's status and what was written of it reach the client before the cut: Node holds
  // the headers until the first body byte, and what res.write() took in this tick until the next
  // (a corked socket), and a destroy now would drop them. A client that saw no status takes the
  // cut for a connection that failed before any answer, and its SDK sends the call again
  // (billed again upstream); one that saw the answer begin and break does not, as without
  // Burnrate (Anthropic's SDK from 1.17 does repeat a non-streaming POST whose answer breaks, as
  // it would without Burnrate, unless the answer says x-should-retry: false: ./retry.ts).
  // (What a slow client has not read yet is dropped still: the cut is not delayed for it.)
  res.flushHeaders()
  setImmediate(destroyRes, res)
}

function destroyRes(res: HttpCall['res']): void {
  res.destroy()
}

/** True when Burnrate cut the connection `res` was to be sent on (for another call on it). */
export function cutConnection(res: HttpCall['res']): boolean {
  return ((res.req?.socket ?? res.socket) as { [CUT]?: boolean } | null)?.[CUT] === true
}
