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
 * Dashboard sessions: `/?token=` makes a random value (32 bytes from the system's CSPRNG), the
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
}
