import { createRequire } from 'node:module'
import type * as Undici from 'undici'
import type { Dispatcher } from 'undici'
import type { IngestCall, IngestResult } from '../../shared/api'
import { retryAfter } from '../http/retry-after'
import { serverText } from './redact'

const require = createRequire(import.meta.url)

/** What one ingest request came to. */
export type SendOutcome =
  | { kind: 'ok'; result: IngestResult }
  /** Worth trying again soon: the server is away, overloaded (5xx, 429) or slow; `retryAfterMs` from its Retry-After. */
  | { kind: 'retry'; error: string; retryAfterMs: number | null }
  /** Refused for a reason waiting alone will not fix (wrong token or address); retried at the longest backoff. */
  | { kind: 'refused'; error: string }
  /** 413: the batch is larger than the team server takes (fewer calls may go). */
  | { kind: 'too_large'; error: string }

/** Time allowed for one ingest request. */
export const SEND_TIMEOUT_MS = 30_000

/**
 * Sends one batch to the team server's `POST /api/ingest`. The token goes only in the
 * Authorization header; error texts name the server by `label` (its address without credentials)
 * and never quote the token back (./redact.ts).
 * With a `dispatcher` (behind a proxy: http/egress.ts), undici's own fetch sends it, the fetch
 * that dispatcher is made for; else Node's.
 */
export async function sendBatch(
  endpoint: string,
  label: string,
  token: string,
  calls: IngestCall[],
  signal?: AbortSignal,
  dispatcher?: Dispatcher,
): Promise<SendOutcome> {
  let res: Response
  try {
    const send = dispatcher ? ((require('undici') as typeof Undici).fetch as unknown as typeof fetch) : fetch
    res = await send(endpoint, {
      ...(dispatcher ? { dispatcher } : {}),
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify({ calls }),
      signal: signal ? AbortSignal.any([signal, AbortSignal.timeout(SEND_TIMEOUT_MS)]) : AbortSignal.timeout(SEND_TIMEOUT_MS),
      redirect: 'error',
    })
  } catch (err) {
    return { kind: 'retry', error: `cannot reach the team server ${label}: ${networkReason(err)}`, retryAfterMs: null }
  }
  let body: unknown = null
  try {
    body = await res.json()
  } catch {
    // not JSON: described by its status below
  }
  if (res.ok) {
    const r = body as Partial<IngestResult> | null
    if (r && typeof r.accepted === 'number' && typeof r.duplicates === 'number') {
      // A team server older than revisions answers no `revised`.
      const revised = typeof r.revised === 'number' ? r.revised : 0
      return { kind: 'ok', result: { accepted: r.accepted, duplicates: r.duplicates, revised, rejected: Array.isArray(r.rejected) ? r.rejected : [] } }
    }
    return { kind: 'refused', error: `${label} answered ${res.status} without an ingest result; is team.url the address of a Burnrate team server?` }
  }
  const message = (body as { error?: { message?: unknown } } | null)?.error?.message
  const said = typeof message === 'string' ? `: ${serverText(message, token)}` : ''
  if (res.status === 429 || res.status >= 500 || res.status === 408) {
    return { kind: 'retry', error: `the team server ${label} answered ${res.status}${said}`, retryAfterMs: retryAfter(res.headers.get('retry-after')) }
  }
  const error = `the team server ${label} refused the calls with ${res.status}${said}`
  return res.status === 413 ? { kind: 'too_large', error } : { kind: 'refused', error }
}

function networkReason(err: unknown): string {
  const e = err as { name?: string; message?: string; cause?: { code?: string; message?: string } }
  if (e?.name === 'TimeoutError') return `no answer within ${SEND_TIMEOUT_MS / 1000} s`
  if (e?.name === 'AbortError') return 'stopped'
  return e?.cause?.code ?? e?.cause?.message ?? e?.message ?? String(err)
}
