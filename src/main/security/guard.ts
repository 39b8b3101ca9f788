import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Config } from '../config/schema'
import { sendError } from '../http/errors'
import { dropUnreadBody } from '../http/unread-body'
import { HostPolicy, answeringHost } from './hosts'
import { sendLoginPage, wantsHtml } from './login-page'
import { nextFromAddress } from './login-next'
import { handleLoginPost, originOf, sessionCookie } from './login-post'
import { bearerToken, cookieValues, safeEqual } from './secrets'
import { DashboardSessions, dashboardCookieName } from './sessions'
import { AuthThrottle, clientKey } from './throttle'

/**
 * Decides, at the very front of the server, whether a request may go any further.
 * Returns false after answering it (403 `forbidden`, 401 `unauthorized`, or a redirect).
 * `proxied` says whether it is a proxied call (those carry the caller's own API key).
 */
export type RequestGuard = ((req: IncomingMessage, res: ServerResponse, proxied: boolean) => boolean) & {
  /** A one-time login code for the dashboard, posted by `/login#login=<code>` (see DashboardSessions.loginCode); null without dashboard.token. */
  loginCode(): string | null
}

export interface GuardOptions {
  config: Pick<Config, 'server' | 'dashboard'>
  /** The port actually listened on (known only once listening). */
  port: () => number
  /** Addresses of this machine's interfaces; the live list when absent. */
  interfaceAddresses?: readonly string[]
}

/** Paths outside the dashboard token: the health probe, the admin API and team ingest (each has its own token). */
function ownAuth(path: string): boolean {
  return path === '/api/health' || path === '/api/admin' || path.startsWith('/api/admin/') || path === '/api/ingest'
}

function pathOf(url: string): string {
  const q = url.indexOf('?')
  return q === -1 ? url : url.slice(0, q)
}

/**
 * The path as express routes it: not percent-decoded (routes match the raw path, so
 * `/%61pi/admin/x` reaches the page fallback, not the admin API), lower-cased (routes match
 * case-insensitively). Whether a path is outside the dashboard token is decided on this: a
 * spelling the check decodes but the router does not would skip the token and get the page.
 */
function routedPath(url: string): string {
  return pathOf(url).toLowerCase()
}

/**
 * The path at its broadest reading: percent-decoded, lower-cased (express matches routes
 * case-insensitively), `\\` read as `/` and repeated slashes collapsed. The cross-site check
 * uses it, where reading more paths as the API only refuses more, so `/API/dashboard/summary`,
 * `//api/...` or `/%61pi/...` cannot slip past it.
 */
export function normalisedPath(url: string): string {
  let p = pathOf(url)
  try {
    p = decodeURIComponent(p)
  } catch {
    // left as sent; the router will not match it either
  }
  return p.toLowerCase().replace(/[\\/]+/g, '/')
}

function isApiPath(normalised: string): boolean {
  return normalised === '/api' || normalised.startsWith('/api/')
}

/**
 * Where to send a browser after `/?token=` login: the same local path without the token.
 * Never another site: `//evil.example/` (protocol-relative) or `/\\evil.example` become `/`.
 */
export function localRedirect(path: string, query: string): string {
  const safe = path.startsWith('/') && !/^\/[\\/]/.test(path) && !/[\r\n]/.test(path) ? path : '/'
  return safe + (query ? `?${query}` : '')
}

export function createRequestGuard(opts: GuardOptions): RequestGuard {
  const { server, dashboard } = opts.config
  // The address browsers open Burnrate at through a reverse proxy: its page is Burnrate's own.
  const publicOrigin = server.public_url ? originOf(server.public_url.trim()) : null
  const policy = new HostPolicy({
    configuredHost: server.host,
    allowedHosts: server.allowed_hosts ?? [],
    allowedOrigins: [...(server.allowed_origins ?? []), ...(publicOrigin ? [publicOrigin] : [])],
    interfaceAddresses: opts.interfaceAddresses,
  })
  const token = dashboard.token || null
  const sessions = new DashboardSessions()
  const throttle = new AuthThrottle()

  function forbid(res: ServerResponse, message: string): false {
    sendError(res, 'forbidden', message, undefined, { vary: 'Origin' })
    return false
  }

  /**
   * The 403 for a page that is not this server's own. One at a name of this server but another
   * port is told how to make it Burnrate's own page, if it is (a reverse proxy's); a browser's
   * login form gets the login page saying so, as ./login-post.ts answers it.
   */
  function refuseOrigin(req: IncomingMessage, res: ServerResponse, origin: string, port: number, proxied: boolean): false {
    const from = origin.slice(0, 100)
    const at = policy.ownNameAt(origin)
    const message =
      at === null
        ? `Requests from the web page at "${from}" are refused: Burnrate answers only its own dashboard; add the origin to server.allowed_origins to allow it.`
        : `Requests from the web page at "${from}" are refused: it is not at the port Burnrate listens on (${port}), so it is another web site's page. ` +
          `If it is Burnrate's own, through a reverse proxy, set server.public_url: ${from} in the config (or add ${at} to server.allowed_hosts).`
    const loginForm = !proxied && token !== null && dashboard.enabled && req.method === 'POST' && routedPath(req.url ?? '/') === '/login'
    if (loginForm && wantsHtml(req)) {
      sendLoginPage(req, res, 403, message, { vary: 'Origin' })
      return false
    }
    return forbid(res, message)
  }

  const guard = (req: IncomingMessage, res: ServerResponse, proxied: boolean): boolean => {
    const passed = decide(req, res, proxied)
    // A request refused here is answered before its body is read: the body is read only so far
    // (../http/unread-body.ts). (The login form reads its own, and bounds it: ./login-post.ts.)
    if (!passed && req.listenerCount('data') === 0) dropUnreadBody(req)
    return passed
  }

  const decide = (req: IncomingMessage, res: ServerResponse, proxied: boolean): boolean => {
    const port = opts.port()
    // This server's address, for the messages below (only built when one is sent).
    const here = (): string => `${answeringHost(server.host)}:${port}`
    const host = req.headers.host
    if (!host) {
      // (Node's own check is off so that this answer has the contract's shape.)
      sendError(res, 'invalid_request', `The request has no Host header; send one naming this server (${here()}).`)
      return false
    }
    if (!policy.allowsHost(host, port)) {
      return forbid(
        res,
        `Host "${host.slice(0, 100)}" is not an address of this Burnrate server; use http://${here()}, or add the name to server.allowed_hosts.`,
      )
    }

    // A browser names the page that made the request. Only this server's own page (or one the
    // user listed) may call it: no other site may spend through the proxy or read the dashboard.
    const origin = req.headers.origin
    if (origin !== undefined) {
      if (!policy.allowsOrigin(origin, port)) return refuseOrigin(req, res, origin, port, proxied)
    } else {
      const site = req.headers['sec-fetch-site']
      if (site === 'cross-site' || site === 'same-site') {
        // Following a link to the dashboard page is fine: the page holds no data, and the
        // calls it then makes are same-origin.
        const navigation = req.headers['sec-fetch-mode'] === 'navigate' && (req.method === 'GET' || req.method === 'HEAD')
        if (proxied || !navigation || isApiPath(normalisedPath(req.url ?? '/'))) {
          return forbid(res, 'Requests from another web site are refused: Burnrate answers only its own dashboard.')
        }
      }
    }

    if (proxied || !token) return true
    const path = pathOf(req.url ?? '/')
    if (ownAuth(routedPath(path))) return true
    const client = clientKey(req.socket.remoteAddress)
    const cookieName = dashboardCookieName(port)

    // The login page and its form (./login-page.ts, ./login-post.ts): the token, or the desktop's
    // one-time code, posted rather than put in an address.
    if (dashboard.enabled && routedPath(path) === '/login') {
      if (req.method === 'POST') {
        handleLoginPost(req, res, { token, sessions, throttle, cookieName, client, publicOrigin })
        return false
      }
      if (req.method === 'GET' || req.method === 'HEAD') {
        sendLoginPage(req, res, 200, null)
        return false
      }
    }

    // The old login link (bookmarks of `/?token=`; the desktop app posts instead): a right token
    // gets a new session and is redirected away at once, so the token never stays in the address
    // bar or history, even when a session already exists, and no Referer carries it. A one-time
    // code is taken only as posted (`/login#login=`): nothing issues `/?login=` links, and one
    // in a query is in the history and a proxy's access log, so it is not read there.
    const q = (req.url ?? '').indexOf('?')
    let presented = false
    if (q !== -1 && (req.method === 'GET' || req.method === 'HEAD')) {
      const params = new URLSearchParams((req.url ?? '').slice(q + 1))
      const given = params.get('token')
      if (given !== null) {
        presented = true
        if (safeEqual(given, token)) {
          // (A login code beside it is not kept in the address either.)
          params.delete('token')
          params.delete('login')
          const cookie = sessionCookie(req, cookieName, sessions)
          const to = localRedirect(path, params.toString())
          const site = req.headers['sec-fetch-site']
          if (site === 'cross-site' || site === 'same-site') {
            // Come from another site (the desktop app's private page, a file://: ../desktop-logic/browser-login.ts),
            // a redirect would still be that site's navigation, which a browser sends no
            // SameSite=Strict cookie with: the page is left by a navigation of its own instead.
            const body = `<!doctype html><meta charset="utf-8"><meta http-equiv="refresh" content="0;url=${to.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;')}"><title>Burnrate</title>\n`
            res.writeHead(200, {
              'content-type': 'text/html; charset=utf-8',
              'set-cookie': cookie,
              'cache-control': 'no-store',
              'referrer-policy': 'no-referrer',
              'content-length': Buffer.byteLength(body),
            })
            res.end(req.method === 'HEAD' ? undefined : body)
            return false
          }
          res.writeHead(303, {
            location: to,
            'set-cookie': cookie,
            'cache-control': 'no-store',
            'referrer-policy': 'no-referrer',
            'content-length': 0,
          })
          res.end()
          return false
        }
      }
    }
    // The right token or a live session always gets in, however many wrong ones came first (and
    // does not clear them: another local user's guesses share the owner's client, ./throttle.ts).
    const bearer = bearerToken(req.headers.authorization)
    if (bearer !== null) {
      if (safeEqual(bearer, token)) return true
      presented = true
    }
    // (A stale session cookie, from before a restart, is not a guess.) Any of the values sent
    // under the name: a page on another port may have set one with a longer path, sent first.
    if (cookieValues(req.headers.cookie, cookieName).some((c) => sessions.valid(c))) return true
    const blocked = throttle.blockedFor(client)
    if (blocked > 0) {
      if (presented) throttle.failedAndBlock(client)
      sendError(res, 'unauthorized', 'Too many wrong dashboard tokens from this machine; wait a few seconds, then use the right one.', undefined, {
        'www-authenticate': 'Bearer realm="burnrate-dashboard"',
        'retry-after': String(Math.ceil(throttle.blockedFor(client) / 1000)),
      })
      return false
    }
    if (presented) throttle.failedAndBlock(client)
    const challenge = { 'www-authenticate': 'Bearer realm="burnrate-dashboard"' }
    // A browser opening a page gets the login form (still a 401); anything else the contract's error.
    if ((req.method === 'GET' || req.method === 'HEAD') && wantsHtml(req) && !isApiPath(normalisedPath(path))) {
      // (Its form goes back to this address once logged in: a bookmark's filters are kept.)
      const next = nextFromAddress(path, q === -1 ? '' : (req.url ?? '').slice(q + 1))
      sendLoginPage(req, res, 401, presented ? 'That is not the dashboard token.' : null, challenge, next)
      return false
    }
    sendError(
      res,
      'unauthorized',
      'The dashboard needs its token: log in at /login in this browser (its form posts the token), or send Authorization: Bearer <dashboard.token>.',
      undefined,
      challenge,
    )
    return false
  }
  return Object.assign(guard, { loginCode: () => (token ? sessions.loginCode() : null) })
}
