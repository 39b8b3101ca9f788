import type { ErrorRequestHandler, Request, RequestHandler, Response } from 'express'
import { errorBody } from '../http/errors'
import { expressModule } from '../server/express-module'

export const MAX_BODY_BYTES = 64 * 1024

/**
 * Whether a request with a body may go on to be parsed as JSON: 415 unless it is declared JSON,
 * 400 when it is declared JSON but has no body at all (not valid JSON; express's `req.is` says
 * null for a request without a body, which read as "not declared JSON" told a client sending the
 * header to send the header). Answers and returns false when not. `param`: the parameter an
 * empty body names (the body's only field: ingest's "calls").
 */
export function declaredJson(req: Request, res: Response, param?: string): boolean {
  const type = String(req.headers['content-type'] ?? '').split(';')[0].trim().toLowerCase()
  if (type !== 'application/json') {
    res.status(415).json(errorBody('unsupported_media_type', 'Send the body as JSON with the header "Content-Type: application/json".'))
    return false
  }
  if (req.headers['content-length'] === '0' || (req.headers['content-length'] === undefined && req.headers['transfer-encoding'] === undefined)) {
    res.status(400).json(errorBody('invalid_request', 'The request body is empty; send a JSON object.', param ? { param } : {}))
    return false
  }
  return true
}

/**
 * 415 unless the body is declared JSON, then 413 over 64 KiB, 400 when it is empty or does not
 * parse. (For routes: express is loaded by then.) Any JSON value parses (not strict): JSON that is
 * no object (`null`, `5`) is the route's to refuse as such, where express's strict mode called it
 * "not valid JSON".
 */
export function jsonBody(): RequestHandler[] {
  const requireJson: RequestHandler = (req, res, next) => {
    if (declaredJson(req, res)) next()
  }
  return [requireJson, expressModule().json({ limit: MAX_BODY_BYTES, type: () => true, strict: false, verify: notEmpty })]
}

/**
 * express.json's `verify`: a body that turns out empty (chunked with no data, a compressed nothing)
 * is refused as declaredJson refuses `Content-Length: 0`; express.json read it as `{}`, so it was a
 * rule missing its fields, or an agent connect that went ahead.
 */
export function notEmpty(_req: unknown, _res: unknown, body: Buffer): void {
  if (body.length === 0) throw Object.assign(new Error('The request body is empty; send a JSON object.'), { type: EMPTY_BODY })
}

/** The error type notEmpty throws with. */
export const EMPTY_BODY = 'entity.empty'

/**
 * The words for a body whose Content-Encoding does not decompress (zlib's error, which body-parser
 * passes on as it is); null for any other error. A route's own failure comes through the same
 * error handler (a database that refused the connection: an errno too, with the system call that
 * failed), so only an error raised while a compressed body was still being read is one.
 */
export function undecompressable(err: unknown, req: Request): string | null {
  const e = err as { type?: string; errno?: unknown; syscall?: unknown; message?: string }
  if (e.type !== undefined || typeof e.errno !== 'number' || e.syscall !== undefined) return null
  const encoding = req.headers['content-encoding']
  // body-parser marks a body it has read (`_body`): an error after that is the route's.
  if (encoding === undefined || (req as { _body?: boolean })._body === true) return null
  return `The request body could not be decompressed (Content-Encoding: ${encoding}): ${e.message}; send it whole, or uncompressed.`
}

/** The contract's errors for what express.json rejects. */
export const jsonBodyErrors: ErrorRequestHandler = (err, req, res, next) => {
  const e = err as { type?: string; message?: string }
  const torn = undecompressable(err, req)
  if (e.type === 'entity.too.large') {
    res.status(413).json(errorBody('payload_too_large', `The request body is larger than ${MAX_BODY_BYTES / 1024} KiB.`))
  } else if (e.type === EMPTY_BODY) {
    res.status(400).json(errorBody('invalid_request', 'The request body is empty; send a JSON object.'))
  } else if (e.type === 'entity.parse.failed') {
    res.status(400).json(errorBody('invalid_request', `The request body is not valid JSON (${e.message}).`))
  } else if (e.type === 'charset.unsupported' || e.type === 'encoding.unsupported') {
    res.status(415).json(errorBody('unsupported_media_type', 'Send the body as UTF-8 JSON without a content encoding.'))
  } else if (torn !== null) {
    res.status(400).json(errorBody('invalid_request', torn))
  } else {
    next(err)
  }
}
