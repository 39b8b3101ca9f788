import type { IncomingMessage, ServerResponse } from 'node:http'
import { clientScheme } from '../http/client-scheme'
import { sendError } from '../http/errors'
import { dropUnreadBody } from '../http/unread-body'
import { loginNext } from './login-next'
import { sendLoginPage, wantsHtml } from './login-page'
import { safeEqual } from './secrets'
import type { DashboardSessions } from './sessions'
import type { AuthThrottle } from './throttle'

export interface LoginDeps {
  token: string
  sessions: DashboardSessions
  throttle: AuthThrottle
  /** The session cookie's name (one per port). */
  cookieName: string
  /** The client wrong tokens are counted against (./throttle.ts clientKey). */
  client: string
  /** `server.public_url`'s origin (its page may log in whatever Host a proxy passes), or null. */
  publicOrigin: string | null
}

/** The longest login form read (a token or a code is well under it). */
const MAX_FORM_BYTES = 8 * 1024

/**
 * A new session's Set-Cookie. Behind a proxy that ends TLS (a team server), Secure: else a
 * browser sends the session over plain HTTP too (a typed http:// address, before the proxy's
 * redirect), in clear text. Not over plain HTTP, where a browser would drop it. A forged header
 * misleads its sender alone.
 */
export function sessionCookie(req: IncomingMessage, cookieName: string, sessions: DashboardSessions): string {
  const secure = clientScheme(req) === 'https' ? '; Secure' : ''
  return `${cookieName}=${sessions.create()}; Path=/; HttpOnly; SameSite=Strict${secure}`
}

/** An origin as browsers send it (`https://name`, the default port left out), or null. */
export function originOf(value: string): string | null {
  try {
    const o = new URL(value).origin
    return o === 'null' ? null : o
  } catch {
    return null
  }
}

/**
 * Why a login is not from a page of this very server (null when it is): its Origin names the
 * address it was sent to (Host), or `server.public_url` (the address browsers use through a
 * reverse proxy that passes Burnrate another Host), and the browser does not call it cross-site. A
 * form on any other page (another site, another port of this host, a file:// page, a sandboxed
 * frame: `Origin: null`) could otherwise log the browser in to a session of its choosing; every
 * browser sends Origin with a form's POST. The reason goes in the 403, so that a proxy set up so
 * is told what to change rather than only that the login was refused.
 */
export function loginOriginProblem(req: IncomingMessage, publicOrigin: string | null): string | null {
  const origin = req.headers.origin
  const site = req.headers['sec-fetch-site']
  const own = "log in from the dashboard's own login page (/login on this server)."
  if (!origin || origin === 'null') {
    return `This login came without the address of the page that sent it (Origin), as a browser's form on a file:// page, a sandboxed frame or a program sends it: ${own}`
  }
  if (site !== undefined && site !== 'same-origin') return `This login was sent from another web site's page (Sec-Fetch-Site: ${String(site).slice(0, 20)}): ${own}`
  const from = originOf(origin)
  if (from === null) return `This login's Origin, "${origin.slice(0, 100)}", is not an address: ${own}`
  if (publicOrigin !== null && from === publicOrigin) return null
  const host = String(req.headers.host ?? '').toLowerCase()
  if (new URL(from).host === host) return null
  return (
    `This login was sent from the page at ${from}, but reached Burnrate addressed to ${host.slice(0, 100)}: a login is taken only from ` +
    "Burnrate's own page, at the address it is sent to. Behind a reverse proxy, have it pass on the Host the browser used " +
    `(nginx: proxy_set_header Host $host;), or set server.public_url: ${from} in the config.`
  )
}

/**
 * `POST /login` (the login page's form, `token=` or the desktop's one-time `login=`): the right
 * one gets a new session cookie and a 303 to the dashboard, at the form's `next` (the address the
 * login page was shown at; ./login-next.ts); the token never goes in an address.
 * A wrong one counts against the client as any wrong dashboard token does.
 */
export function handleLoginPost(req: IncomingMessage, res: ServerResponse, d: LoginDeps): void {
  const refuse = (fn: () => void) => {
    fn()
    // (The rest of the body is read only so far: ../http/unread-body.ts.)
    dropUnreadBody(req)
  }
  const problem = loginOriginProblem(req, d.publicOrigin)
  if (problem !== null) {
    // (A browser's form gets the login page saying so; anything else the contract's error.)
    return refuse(() => (wantsHtml(req) ? sendLoginPage(req, res, 403, problem) : sendError(res, 'forbidden', problem)))
  }
  const type = String(req.headers['content-type'] ?? '').split(';')[0].trim().toLowerCase()
  if (type !== 'application/x-www-form-urlencoded') {
    return refuse(() => sendError(res, 'unsupported_media_type', 'POST /login takes the login form (application/x-www-form-urlencoded: token=<dashboard.token>).'))
  }
  const parts: Buffer[] = []
  let size = 0
  let done = false
  req.on('data', (chunk: Buffer) => {
    if (done) return
    size += chunk.length
    if (size > MAX_FORM_BYTES) {
      done = true
      refuse(() => sendError(res, 'payload_too_large', `The login form is over ${MAX_FORM_BYTES} bytes; send the dashboard token alone.`))
      return
    }
    parts.push(chunk)
  })
  req.on('error', () => {
    done = true
  })
  req.on('end', () => {
    if (done) return
    done = true
    answer(req, res, d, new URLSearchParams(Buffer.concat(parts).toString('utf8')))
  })
}

function answer(req: IncomingMessage, res: ServerResponse, d: LoginDeps, form: URLSearchParams): void {
  const given = form.get('token')
  const code = form.get('login')
  // Back to the address the login page was shown at (only ever a path of this server).
  const next = loginNext(form.get('next'))
  // (A code is used up by being tried, right or wrong; the right token always gets in, however many wrong ones came first.)
  if ((code !== null && d.sessions.redeem(code)) || (given !== null && safeEqual(given, d.token))) {
    res.writeHead(303, {
      location: next,
      'set-cookie': sessionCookie(req, d.cookieName, d.sessions),
      'cache-control': 'no-store',
      'referrer-policy': 'no-referrer',
      'content-length': 0,
    })
    res.end()
    return
  }
  const presented = given !== null || code !== null
  const blocked = d.throttle.blockedFor(d.client)
  if (presented) d.throttle.failedAndBlock(d.client)
  const headers: Record<string, string> = { 'www-authenticate': 'Bearer realm="burnrate-dashboard"' }
  if (blocked > 0) headers['retry-after'] = String(Math.ceil(d.throttle.blockedFor(d.client) / 1000))
  const message =
    blocked > 0
      ? 'Too many wrong dashboard tokens from this machine; wait a few seconds, then use the right one.'
      : code !== null && given === null
        ? 'That login link has been used or is over a minute old: open the dashboard from Burnrate again, or give the dashboard token.'
        : 'That is not the dashboard token (dashboard.token in the config).'
  if (wantsHtml(req)) sendLoginPage(req, res, 401, message, headers, next)
  else sendError(res, 'unauthorized', message, undefined, headers)
}
