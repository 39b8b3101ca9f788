import type { ErrorRequestHandler, NextFunction, Request, RequestHandler, Response } from 'express'
import { bodyProblem, EMPTY_BODY } from '../http/body-errors'
import { errorBody, STATUS_OF } from '../http/errors'
import { dropUnreadBody, REFUSED_BODY_BYTES, refusePast } from '../http/unread-body'
import { expressModule } from '../server/express-module'
import { duplicatedKey, type Watched } from '../proxy/ws/duplicate-keys'

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
 * "not valid JSON". `once`: fields a body must not name twice (a price's, a rule's): JSON.parse
 * keeps the last value, another reader of the same body (a script's log, a proxy) may keep the
 * first, so such a body is a 400 naming the field, found by the WebSocket frames' scan
 * (../proxy/ws/duplicate-keys.ts: the body's text is read again only when it holds a field's
 * name twice, or a `\u` escape).
 */
export function jsonBody(once?: Watched): RequestHandler[] {
  const requireJson: RequestHandler = (req, res, next) => {
    if (declaredJson(req, res)) next()
  }
  const parse = boundedJson(MAX_BODY_BYTES, once ? keepText : notEmpty)
  if (!once) return [requireJson, parse]
  const namedOnce: RequestHandler = (req, res, next) => {
    const text = TEXT.get(req)
    TEXT.delete(req)
    const key = text === undefined ? null : duplicatedKey(text, once)
    if (key === null) {
      next()
      return
    }
    res.status(400).json(errorBody('invalid_request', `The request body names "${key}" more than once; name each field once (JSON readers differ on which of its values they keep).`, { param: key }))
  }
  return [requireJson, parse, namedOnce]
}

/**
 * express.json up to `limit` bytes (any JSON value: not strict), with a body it refuses read only
 * so far. express.json reads such a body (over the limit, not decompressing) to its end before it
 * answers, however long: a client could stream gigabytes into the server, and one that waits for
 * the answer before sending more never got it. A body whose Content-Length is over the limit (not
 * compressed) is refused at once (413, as express.json says it) and read and dropped only so far
 * (../http/unread-body.ts). One that comes otherwise (chunked) is refused so once more than the
 * limit has come (compressed: once REFUSED_BODY_BYTES past it, its size decoded being unknown
 * here), and its connection closed REFUSED_BODY_BYTES past the limit, once the answer has gone out.
 */
export function boundedJson(limit: number, verify: (req: any, res: any, body: Buffer) => void): RequestHandler {
  const parse = expressModule().json({ limit, type: () => true, strict: false, verify })
  const tooLarge = (len: number): Error => Object.assign(new Error('request entity too large'), { type: 'entity.too.large', status: 413, expected: len, limit })
  return (req, res, next) => {
    const len = req.headers['content-length']
    const encoding = req.headers['content-encoding']
    const identity = encoding === undefined || encoding.toLowerCase() === 'identity'
    if (len !== undefined && Number(len) > limit && identity) {
      dropUnreadBody(req)
      next(tooLarge(Number(len)))
      return
    }
    // express.json passes on its refusal only once the body has ended: the refusal here goes first,
    // and express.json's own, when it comes, is dropped.
    let passed = false
    const once: NextFunction = (err?: unknown) => {
      if (passed) return
      passed = true
      next(err)
    }
    parse(req, res, once)
    // (Only a body express.json is reading: it has a listener for it.)
    if (!req.complete && req.listenerCount('data') > 0) {
      const bound = limit + REFUSED_BODY_BYTES
      const past = identity ? limit : bound
      refusePast(req, res, past, bound, () => once(tooLarge(past)))
    }
  }
}

/** A body's text (decompressed, no BOM) while its fields are checked, for `jsonBody(once)`. */
const TEXT = new WeakMap<object, string>()

function keepText(req: object, res: unknown, body: Buffer): void {
  notEmpty(req, res, body)
  const text = body.toString('utf8')
  TEXT.set(req, text.charCodeAt(0) === 0xfeff ? text.slice(1) : text)
}

/**
 * express.json's `verify`: a body that turns out empty (chunked with no data, a compressed nothing)
 * is refused as declaredJson refuses `Content-Length: 0`; express.json read it as `{}`, so it was a
 * rule missing its fields, or an agent connect that went ahead.
 */
export function notEmpty(_req: unknown, _res: unknown, body: Buffer): void {
  if (body.length === 0) throw Object.assign(new Error('The request body is empty; send a JSON object.'), { type: EMPTY_BODY })
}

/** The contract's errors for what express.json rejects (../http/body-errors.ts). */
export const jsonBodyErrors: ErrorRequestHandler = (err, req, res, next) => {
  const problem = bodyProblem(err, req, `The request body is larger than ${MAX_BODY_BYTES / 1024} KiB.`)
  if (problem === null) next(err)
  else res.status(STATUS_OF[problem.type]).json(errorBody(problem.type, problem.message))
}
