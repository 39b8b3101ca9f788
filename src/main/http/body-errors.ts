import zlib from 'node:zlib'
import type { Request } from 'express'
import type { ErrorType } from '../../shared/api'

/** The error type of a JSON body that turns out empty (../admin/json-body.ts notEmpty). */
export const EMPTY_BODY = 'entity.empty'

/** The Content-Encodings body-parser undoes (zstd where this Node has it, as body-parser checks). */
const ENCODINGS = ['gzip', 'deflate', 'br', ...(typeof (zlib as { createZstdDecompress?: unknown }).createZstdDecompress === 'function' ? ['zstd'] : [])]

/** A body the route could not read, as the contract's error: its type (and so status) and words. */
export interface BodyProblem {
  type: ErrorType
  message: string
}

/**
 * The contract's error for what body-parser (express.json) refused, or null for an error that is
 * not about the body (the route's own, passed on). `tooLarge`: the words for a body over the
 * route's limit. Every type body-parser and raw-body raise is named here, so none reaches a
 * client in their own words ("unsupported charset", "request size did not match content length").
 * `parsed`: the route reads its body with express.json, so zlib's error on it is a body that does
 * not decompress (`undecompressable`); elsewhere such an error is the route's own.
 */
export function bodyProblem(err: unknown, req: Request, tooLarge: string, parsed = true): BodyProblem | null {
  const e = (err ?? {}) as { type?: unknown; message?: string; charset?: unknown }
  switch (e.type) {
    case 'entity.too.large':
      return { type: 'payload_too_large', message: tooLarge }
    case 'parameters.too.many':
      return { type: 'payload_too_large', message: 'The request body has more parameters than Burnrate reads; send a JSON object.' }
    case EMPTY_BODY:
      return { type: 'invalid_request', message: 'The request body is empty; send a JSON object.' }
    case 'entity.parse.failed':
      return { type: 'invalid_request', message: `The request body is not valid JSON (${e.message}).` }
    case 'charset.unsupported':
      return {
        type: 'unsupported_media_type',
        message: `The request body's charset ${JSON.stringify(String(e.charset ?? '').toLowerCase())} is not supported; send the JSON in UTF-8 (Content-Type: application/json).`,
      }
    case 'encoding.unsupported':
      return {
        type: 'unsupported_media_type',
        message: `The request body's Content-Encoding ${JSON.stringify(String(req.headers['content-encoding'] ?? ''))} is not supported; send it uncompressed, or compressed with one of ${ENCODINGS.join(', ')}.`,
      }
    case 'request.aborted':
      return { type: 'invalid_request', message: 'The request body stopped before all of it arrived; send it again.' }
    case 'request.size.invalid':
      return { type: 'invalid_request', message: 'The request body was not as long as its Content-Length said; send it again whole.' }
    case 'entity.verify.failed':
      return { type: 'invalid_request', message: 'The request body could not be read as JSON; send a JSON object in UTF-8.' }
  }
  const torn = parsed ? undecompressable(err, req) : null
  return torn === null ? null : { type: 'invalid_request', message: torn }
}

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

/**
 * The words for a path whose %-escape is no UTF-8 (express's router fails to decode a route
 * parameter: a URIError it gives status 400 and "Failed to decode param '…'"), else null.
 */
export function undecodablePath(err: unknown, req: Request): string | null {
  if (!(err instanceof URIError)) return null
  const param = /^Failed to decode param '(.*)'$/s.exec(err.message)
  if (param === null) return null
  const path = req.originalUrl.split('?')[0]
  return `The path ${path} holds a %-escape that is not UTF-8 text (${JSON.stringify(param[1])}); escape each byte of the name's UTF-8.`
}
