import { randomBytes } from 'node:crypto'

/** The dashboard's session cookie for the server on `port`: one name per port, so two servers on one host never share or overwrite it. */
export function dashboardCookieName(port: number): string {
  return `burnrate_dashboard_${port}`
}

export interface SessionOptions {
  /** Sessions kept at most; past it the oldest login is forgotten. */
  max: number
  /** A session unused this long is forgotten (ms). */
  idleMs: number
  now: () => number
}

const DEFAULTS: SessionOptions = { max: 1000, idleMs: 30 * 24 * 3_600_000, now: Date.now }

/**
 * Dashboard sessions: a login (`POST /login`, an old `/?token=` link) makes a random value (32 bytes from the system's CSPRNG), the
 * cookie carries only that. It cannot be computed from the token, is new at every login, and
 * is forgotten when Burnrate restarts or after a month unused.
 */
export class DashboardSessions {
  private readonly opts: SessionOptions
  /** session value -> last use (insertion order: oldest login first). */
  private readonly sessions = new Map<string, number>()

  constructor(opts: Partial<SessionOptions> = {}) {
    this.opts = { ...DEFAULTS, ...opts }
  }

  create(): string {
    const value = randomBytes(32).toString('base64url')
    if (this.sessions.size >= this.opts.max) this.sessions.delete(this.sessions.keys().next().value as string)
    this.sessions.set(value, this.opts.now())
    return value
  }

  /** Is `value` a live session? A hit refreshes it. */
  valid(value: string): boolean {
    // (A hash-map lookup leaks nothing useful about 256-bit random values.)
    if (value.length !== 43) return false
    const seen = this.sessions.get(value)
    if (seen === undefined) return false
    const now = this.opts.now()
    if (now - seen > this.opts.idleMs) {
      this.sessions.delete(value)
      return false
    }
    this.sessions.set(value, now)
    return true
  }

  get size(): number {
    return this.sessions.size
  }

  /** One-time login codes -> when they stop working (ms). */
  private readonly codes = new Map<string, number>()

  /**
   * A login code, posted by the login page from `/login#login=<code>`: random, good once, for LOGIN_CODE_MS. What the desktop app
   * hands the browser instead of the token: the address it opens goes on a command line (the
   * browser's, `xdg-open`'s), which every user of the machine can read in `ps`.
   */
  loginCode(): string {
    const now = this.opts.now()
    for (const [c, until] of this.codes) if (until < now) this.codes.delete(c)
    if (this.codes.size >= MAX_LOGIN_CODES) this.codes.delete(this.codes.keys().next().value as string)
    const code = randomBytes(32).toString('base64url')
    this.codes.set(code, now + LOGIN_CODE_MS)
    return code
  }

  /** Whether `code` is a login code still good; it is used up either way. */
  redeem(code: string): boolean {
    if (code.length !== 43) return false
    const until = this.codes.get(code)
    if (until === undefined) return false
    this.codes.delete(code)
    return until >= this.opts.now()
  }
}

/** How long a login code works (the browser opens it at once). */
export const LOGIN_CODE_MS = 60_000
const MAX_LOGIN_CODES = 100
