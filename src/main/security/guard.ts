import { createHash } from 'node:crypto'
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Config } from '../config/schema'
import { sendError } from '../http/errors'
import { HostPolicy, answeringHost } from './hosts'
import { bearerToken, cookieValue, safeEqual } from './secrets'
import { AuthThrottle } from './throttle'

/** The cookie that `/?token=...` sets so the dashboard page needs no change to send the token. */
export const DASHBOARD_COOKIE = 'burnrate_dashboard'

/**
 * Decides, at the very front of the server, whether a request may go any further.
 * Returns false after answering it (403 `forbidden`, 401 `unauthorized`, or a redirect).
 * `proxied` says whether it is a proxied call (those carry the caller's own API key).
 */
export type RequestGuard = (req: IncomingMessage, res: ServerResponse, proxied: boolean) => boolean

export interface GuardOptions {
  config: Pick<Config, 'server' | 'dashboard'>
  /** The port actually listened on (known only once listening). */
  port: () => number
  /** Addresses of this machine's interfaces; the live list when absent. */
  interfaceAddresses?: readonly string[]
}

/** Paths outside the dashboard token: the health probe and the admin API (which has its own token). */
function ownAuth(path: string): boolean {
  return path === '/api/health' || path === '/api/admin' || path.startsWith('/api/admin/')
}

function pathOf(url: string): string {
  const q = url.indexOf('?')
  return q === -1 ? url : url.slice(0, q)
}

export function dashboardCookie(token: string): string {
  return createHash('sha256').update(`burnrate-dashboard:${token}`).digest('hex')
}

export function createRequestGuard(opts: GuardOptions): RequestGuard {
  const { server, dashboard } = opts.config
  const policy = new HostPolicy({
    configuredHost: server.host,
    allowedHosts: server.allowed_hosts ?? [],
    allowedOrigins: server.allowed_origins ?? [],
    interfaceAddresses: opts.interfaceAddresses,
  })
  const token = dashboard.token || null
  const cookie = token ? dashboardCookie(token) : null
  const throttle = new AuthThrottle()

  function forbid(res: ServerResponse, message: string): false {
    sendError(res, 'forbidden', message, undefined, { vary: 'Origin' })
    return false
  }

  const ok = (ip: string): true => {
    throttle.succeeded(ip)
    return true
  }

  return (req, res, proxied) => {
    const port = opts.port()
    const here = `${answeringHost(server.host)}:${port}`
    const host = req.headers.host
    if (!host) {
      // (Node's own check is off so that this answer has the contract's shape.)
      sendError(res, 'invalid_request', `The request has no Host header; send one naming this server (${here}).`)
      return false
    }
    if (!policy.allowsHost(host, port)) {
      return forbid(
        res,
        `Host "${host.slice(0, 100)}" is not an address of this Burnrate server; use http://${here}, or add the name to server.allowed_hosts.`,
      )
    }

    // A browser names the page that made the request. Only this server's own page (or one the
    // user listed) may call it: no other site may spend through the proxy or read the dashboard.
    const origin = req.headers.origin
    if (origin !== undefined) {
      if (!policy.allowsOrigin(origin, port)) {
        return forbid(
          res,
          `Requests from the web page at "${origin.slice(0, 100)}" are refused: Burnrate answers only its own dashboard; add the origin to server.allowed_origins to allow it.`,
        )
      }
    } else {
      const site = req.headers['sec-fetch-site']
      if (site === 'cross-site' || site === 'same-site') {
        // Following a link to the dashboard page is fine: the page holds no data, and the
        // calls it then makes are same-origin.
        const navigation = req.headers['sec-fetch-mode'] === 'navigate' && (req.method === 'GET' || req.method === 'HEAD')
        if (proxied || !navigation || (req.url ?? '/').startsWith('/api/')) {
          return forbid(res, 'Requests from another web site are refused: Burnrate answers only its own dashboard.')
        }
      }
    }

    if (proxied || !token) return true
    const path = pathOf(req.url ?? '/')
    if (ownAuth(path)) return true
    // Guessing is slowed down: after 5 wrong tokens from an address, it must wait before the next.
    const ip = req.socket.remoteAddress ?? ''
    const blocked = throttle.blockedFor(ip)
    if (blocked > 0) {
      sendError(res, 'unauthorized', 'Too many wrong dashboard tokens from this address; wait a few seconds, then use the right one.', undefined, {
        'www-authenticate': 'Bearer realm="burnrate-dashboard"',
        'retry-after': String(Math.ceil(blocked / 1000)),
      })
      return false
    }
    let presented = false
    const bearer = bearerToken(req.headers.authorization)
    if (bearer !== null) {
      if (safeEqual(bearer, token)) return ok(ip)
      presented = true
    }
    const c = cookieValue(req.headers.cookie, DASHBOARD_COOKIE)
    if (c !== null && cookie !== null) {
      if (safeEqual(c, cookie)) return ok(ip)
      presented = true
    }
    const q = (req.url ?? '').indexOf('?')
    if (q !== -1 && (req.method === 'GET' || req.method === 'HEAD')) {
      const params = new URLSearchParams((req.url ?? '').slice(q + 1))
      const given = params.get('token')
      if (given !== null) presented = true
      if (given !== null && safeEqual(given, token)) {
        throttle.succeeded(ip)
        params.delete('token')
        const rest = params.toString()
        res.writeHead(303, {
          location: path + (rest ? `?${rest}` : ''),
          'set-cookie': `${DASHBOARD_COOKIE}=${cookie}; Path=/; HttpOnly; SameSite=Strict`,
          'cache-control': 'no-store',
          'content-length': 0,
        })
        res.end()
        return false
      }
    }
    if (presented) throttle.failedAndBlock(ip)
    sendError(
      res,
      'unauthorized',
      'The dashboard needs its token: open /?token=<dashboard.token> once in this browser, or send Authorization: Bearer <dashboard.token>.',
      undefined,
      { 'www-authenticate': 'Bearer realm="burnrate-dashboard"' },
    )
    return false
  }
}
