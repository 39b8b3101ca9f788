import { createHash, timingSafeEqual } from 'node:crypto'
import type { IncomingMessage } from 'node:http'
import type { RequestHandler } from 'express'
import { errorBody } from '../http/errors'
import { bearerCredential } from '../security/secrets'

function digest(s: string): Buffer {
  return createHash('sha256').update(s, 'utf8').digest()
}

function presented(req: IncomingMessage): string | null {
  const header = req.headers.authorization
  return typeof header === 'string' ? bearerCredential(header) : null
}

/**
 * `Authorization: Bearer <admin.token>` on every admin request (contract: Admin API). Both
 * sides are hashed to equal-length digests and compared with timingSafeEqual, so neither the
 * token's content nor its length shows in the time an answer takes. Tokens are never logged.
 */
export function adminTokenIsRight(token: string): (req: IncomingMessage) => boolean {
  const expected = digest(token)
  return (req) => {
    const given = presented(req)
    return given !== null && timingSafeEqual(digest(given), expected)
  }
}

/** The 401 for a request without the right admin token (missing, or wrong). */
export const refuseAdmin: RequestHandler = (req, res) => {
  const message =
    presented(req) === null
      ? 'The admin API needs the header "Authorization: Bearer <admin.token>".'
      : 'The admin token is wrong; use the admin.token from the config file.'
  res.status(401).set('www-authenticate', 'Bearer').json(errorBody('unauthorized', message))
}
