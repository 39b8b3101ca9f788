import type { ServerResponse } from 'node:http'
import type { ErrorType } from '../../shared/api'

export const STATUS_OF: Record<ErrorType, number> = {
  invalid_request: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  budget_exceeded: 429,
  loop_detected: 429,
  rate_limited: 429,
  service_unavailable: 503,
  upstream_unreachable: 502,
  upstream_timeout: 504,
  // Not in the contract's list, which has no 405: HTTP's own status for a refused method, with `Allow`.
  method_not_allowed: 405,
  internal: 500,
}

export function errorBody(type: ErrorType, message: string, extra?: Record<string, unknown>) {
  return { error: { type, message, ...extra } }
}

/** Answers with the contract's error shape on a bare node:http response. */
export function sendError(
  res: ServerResponse,
  type: ErrorType,
  message: string,
  extra?: Record<string, unknown>,
  headers?: Record<string, string>,
): void {
  if (res.headersSent) {
    res.destroy()
    return
  }
  const body = JSON.stringify(errorBody(type, message, extra))
  res.writeHead(STATUS_OF[type], {
    ...headers,
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(body),
  })
  res.end(body)
}
