import { isIPv4, isIPv6 } from 'node:net'
import type { RequestHandler } from 'express'
import { errorBody } from '../http/errors'

export interface ThrottleOptions {
  /** Wrong tokens a client may send before it is slowed down. */
  free: number
  /** Delay after the first failure past `free`; it doubles with each further failure. */
  baseMs: number
  /** Longest delay for one attempt. */
  maxMs: number
  /** Failures are forgotten after this long without one. */
  forgetMs: number
  /** Attempts that would wait longer than this in line are refused without being checked. */
  maxQueueMs: number
  /** Clients remembered at most (the oldest are forgotten first). */
  maxClients: number
  now: () => number
}

const DEFAULTS: ThrottleOptions = {
  free: 5,
  baseMs: 250,
  maxMs: 10_000,
  forgetMs: 15 * 60_000,
  maxQueueMs: 60_000,
  maxClients: 10_000,
  now: Date.now,
}

interface Client {
  failures: number
  lastFailure: number
  /** When the next attempt may be checked (queued attempts). */
  nextAt: number
  /** Until when attempts are refused unchecked (`blockedFor`). */
  blockedUntil: number
}

/**
 * Slows down guessing of a token: after `free` wrong tokens from one address, every further
 * attempt from it waits its turn, `baseMs` doubling per failure up to `maxMs`. Attempts wait
 * in line one after another, so sending many at once gains nothing. Failures are forgotten only
 * with time (`forgetMs`), never by a right token: one client may be several people (every loopback
 * address is one, ./clientKey, and so is everyone behind a reverse proxy), and the owner's own
 * requests (the open dashboard polls every 5 s) would hand a guesser among them fresh free guesses.
 * The right token never waits (./guard.ts, slowDownFailures), so nobody is locked out by this.
 */
export class AuthThrottle {
  private readonly opts: ThrottleOptions
  private readonly clients = new Map<string, Client>()

  constructor(opts: Partial<ThrottleOptions> = {}) {
    this.opts = { ...DEFAULTS, ...opts }
  }

  /** How long the next attempt from `ip` must wait before it is checked (ms); -1 to refuse it unchecked. */
  reserve(ip: string): number {
    const o = this.opts
    const c = this.clients.get(ip)
    if (!c || c.failures < o.free) return 0
    const now = o.now()
    if (now - c.lastFailure > o.forgetMs) {
      this.clients.delete(ip)
      return 0
    }
    const penalty = Math.min(o.baseMs * 2 ** Math.min(c.failures - o.free, 30), o.maxMs)
    const start = Math.max(now, c.nextAt)
    if (start - now > o.maxQueueMs) return -1
    c.nextAt = start + penalty
    return c.nextAt - now
  }

  failed(ip: string): void {
    const now = this.opts.now()
    let c = this.clients.get(ip)
    // Failures long past are forgotten here too, not only by reserve(): the dashboard token's
    // blocks (failedAndBlock) never reserve, and would otherwise count every old typo forever.
    if (c && now - c.lastFailure > this.opts.forgetMs) {
      this.clients.delete(ip)
      c = undefined
    }
    if (!c) {
      if (this.clients.size >= this.opts.maxClients) this.clients.delete(this.clients.keys().next().value as string)
      c = { failures: 0, lastFailure: now, nextAt: 0, blockedUntil: 0 }
      this.clients.set(ip, c)
    }
    c.failures++
    c.lastFailure = now
  }

  /**
   * For checks that cannot wait (the dashboard token, checked at the front of the server):
   * how long attempts from `ip` are still refused unchecked, in ms (0: check it).
   */
  blockedFor(ip: string): number {
    const c = this.clients.get(ip)
    return c ? Math.max(0, c.blockedUntil - this.opts.now()) : 0
  }

  /** A failure for `blockedFor`: past `free` failures, attempts are refused for the doubling delay. */
  failedAndBlock(ip: string): void {
    this.failed(ip)
    const c = this.clients.get(ip)!
    const o = this.opts
    if (c.failures > o.free) c.blockedUntil = o.now() + Math.min(o.baseMs * 2 ** Math.min(c.failures - o.free - 1, 30), o.maxMs)
  }

  failures(ip: string): number {
    return this.clients.get(ip)?.failures ?? 0
  }
}

/**
 * The client a failure counts against: the remote address, except that every loopback address
 * (127.0.0.0/8, ::1, ::ffff:127.x) is one client, so a local process cannot rotate through
 * 127.0.0.x for fresh free guesses, and an IPv6 client is its /64: one host is handed a whole
 * /64 (SLAAC and privacy addresses, a VPS's prefix), and had fresh free guesses at every address
 * of it. An IPv4 client of a server listening on `::` (`::ffff:a.b.c.d`) is its IPv4 address.
 */
export function clientKey(remoteAddress: string | undefined): string {
  // (A link-local address may come with its zone: fe80::1%eth0.)
  let a = (remoteAddress ?? '').toLowerCase().replace(/%.*$/, '')
  if (a.startsWith('::ffff:') && isIPv4(a.slice(7))) a = a.slice(7)
  if (a === '::1' || a.startsWith('127.')) return 'loopback'
  return isIPv6(a) ? prefix64(a) : a
}

/** An IPv6 address's first 64 bits, as `2001:db8:1:2::/64`. */
function prefix64(address: string): string {
  const cut = address.indexOf('::')
  const head = (cut === -1 ? address : address.slice(0, cut)).split(':').filter((g) => g !== '')
  const tail = cut === -1 ? [] : address.slice(cut + 2).split(':').filter((g) => g !== '')
  // (An IPv4 tail, a.b.c.d, is the last two groups.)
  const width = (groups: string[]) => groups.reduce((n, g) => n + (g.includes('.') ? 2 : 1), 0)
  const groups = cut === -1 ? head : [...head, ...Array<string>(Math.max(0, 8 - width(head) - width(tail))).fill('0'), ...tail]
  return `${groups
    .slice(0, 4)
    .map((g) => parseInt(g, 16).toString(16))
    .join(':')}::/64`
}

/**
 * Guards a route with a token check: the right token always passes at once, however many wrong
 * ones came before (and does not clear them: AuthThrottle) (a flood of guesses never locks out the owner). Wrong or missing tokens are
 * answered by `refuse`, slowed down by `throttle` per client: past the free ones they wait in
 * line, and past the longest line they are refused without waiting.
 */
export function slowDownFailures(
  isRight: (req: Parameters<RequestHandler>[0]) => boolean,
  refuse: RequestHandler,
  throttle = new AuthThrottle(),
): RequestHandler {
  return (req, res, next) => {
    const client = clientKey(req.socket.remoteAddress)
    if (isRight(req)) {
      next()
      return
    }
    const wait = throttle.reserve(client)
    if (wait < 0) {
      res
        .status(401)
        .set('www-authenticate', 'Bearer')
        .set('retry-after', '60')
        .json(errorBody('unauthorized', 'Too many wrong tokens from this machine; wait a minute, then use the right token.'))
      return
    }
    const run = () => {
      throttle.failed(client)
      if (!res.destroyed) refuse(req, res, next)
    }
    if (wait === 0) run()
    else setTimeout(run, wait).unref()
  }
}
