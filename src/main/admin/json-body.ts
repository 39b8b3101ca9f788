import type { ErrorRequestHandler, RequestHandler } from 'express'
import { errorBody } from '../http/errors'
import { expressModule } from '../server/express-module'

export const MAX_BODY_BYTES = 64 * 1024

/** 415 unless the body is declared JSON, then 413 over 64 KiB, 400 when it does not parse. (For routes: express is loaded by then.) */
export function jsonBody(): RequestHandler[] {
  const requireJson: RequestHandler = (req, res, next) => {
    if (req.is('application/json') !== 'application/json') {
      res
        .status(415)
        .json(errorBody('unsupported_media_type', 'Send the body as JSON with the header "Content-Type: application/json".'))
      return
    }
    next()
  }
  return [requireJson, expressModule().json({ limit: MAX_BODY_BYTES, type: () => true, strict: true })]
}

/** The contract's errors for what express.json rejects. */
export const jsonBodyErrors: ErrorRequestHandler = (err, _req, res, next) => {
  const e = err as { type?: string; message?: string }
  if (e.type === 'entity.too.large') {
    res.status(413).json(errorBody('payload_too_large', `The request body is larger than ${MAX_BODY_BYTES / 1024} KiB.`))
  } else if (e.type === 'entity.parse.failed') {
    res.status(400).json(errorBody('invalid_request', `The request body is not valid JSON (${e.message}).`))
  } else if (e.type === 'charset.unsupported' || e.type === 'encoding.unsupported') {
    res.status(415).json(errorBody('unsupported_media_type', 'Send the body as UTF-8 JSON without a content encoding.'))
  } else {
    next(err)
  }
}
