import { createHash, timingSafeEqual } from 'node:crypto'
import type { RequestHandler } from 'express'
import { errorBody } from '../http/errors'

function digest(s: string): Buffer {
  return createHash('sha256').update(s, 'utf8').digest()
}

/**
 * `Authorization: Bearer <admin.token>` on every admin request (contract: Admin API). Both
 * sides are hashed to equal-length digests and compared with timingSafeEqual, so neither the
 * token's content nor its length shows in the time an answer takes. Tokens are never logged.
 */
export function adminAuth(token: string): RequestHandler {
  const expected = digest(token)
  return (req, res, next) => {
    const header = req.headers.authorization
    const m = typeof header === 'string' ? /^\s*Bearer\s+(\S.*?)\s*$/i.exec(header) : null
    if (!m) {
      res
        .status(401)
        .set('www-authenticate', 'Bearer')
        .json(errorBody('unauthorized', 'The admin API needs the header "Authorization: Bearer <admin.token>".'))
      return
    }
    if (!timingSafeEqual(digest(m[1]), expected)) {
      res
        .status(401)
        .set('www-authenticate', 'Bearer')
        .json(errorBody('unauthorized', 'The admin token is wrong; use the admin.token from the config file.'))
      return
    }
    next()
  }
}
