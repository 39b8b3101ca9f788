import type { ClientHeaders } from '../headers'
import type { RequestStream } from './request-stream'

/** Methods a client may send again without asking for the effect twice (RFC 9110, 9.2.2). */
export const IDEMPOTENT = new Set(['GET', 'HEAD', 'OPTIONS', 'PUT', 'DELETE', 'TRACE'])

/**
 * Whether a call that failed with `err` is sent once more, on a fresh connection: the kept-alive
 * connection it went on had already been closed by the upstream (nginx, uvicorn and load balancers
 * close idle ones without saying when), nothing of the answer came, so a call that may be repeated
 * (a GET: a list of models, a response read again) is sent again. Never a POST: the upstream may
 * have had it whole and billed it before the connection dropped, and a second one would be billed
 * again and recorded nowhere; the client gets the 502 and decides (the agents' SDKs retry it, and
 * that call is recorded). Nor a body streamed upstream: what of it was sent is gone. (The caller
 * sends a call again once at most.)
 */
export function sendsAgain(err: Error, method: string | undefined, body: Buffer | RequestStream | null, answered: boolean, responseStarted: boolean): boolean {
  return !answered && !responseStarted && IDEMPOTENT.has(method ?? '') && closedWhileIdle(err) && (body === null || Buffer.isBuffer(body))
}

/**
 * True when a request failed because the connection it was written to had been closed by the
 * upstream, and that connection had served earlier calls (it was a reused keep-alive one).
 */
export function closedWhileIdle(err: Error): boolean {
  const e = err as Error & { code?: string; socket?: { bytesRead?: number } }
  return e.code === 'UND_ERR_SOCKET' && (e.socket?.bytesRead ?? 0) > 0
}

/**
 * An answer sent knowing it broke after the provider had answered (a Message Batch created): an
 * SDK that sends a POST again when its answer breaks part-way (Anthropic's TypeScript SDK from
 * 1.17) is told not to, as the provider says on answers it knows must not be repeated; the batch
 * would be created, and billed, twice. A GET is repeated harmlessly, so it is left to the SDK.
 */
export function tellNotToRetry(headers: ClientHeaders, method: string | undefined): void {
  if (!IDEMPOTENT.has(method ?? '')) headers.set('x-should-retry', 'false')
}
