import type { IncomingMessage } from 'node:http'
import { clientScheme } from '../../http/client-scheme'
import type { Route } from '../routes'

/** The most of an answer held to be rewritten; a larger one passes unchanged. */
export const RELINK_LIMIT = 8 * 1024 * 1024

/**
 * Burnrate's address of the call's provider as the client reached it: the scheme it used (`https`
 * behind a reverse proxy that ends TLS and says so: see clientScheme), the `Host` the client sent
 * (already checked by the request guard), the path a reverse proxy serves Burnrate under
 * (forwardedPrefix) and the path before the provider's own (`/anthropic`, or nothing for
 * Anthropic's paths at the root), e.g. `http://127.0.0.1:8787`.
 */
export function clientBase(req: IncomingMessage, route: Route): string {
  const url = req.url ?? '/'
  const q = url.indexOf('?')
  const pathname = q === -1 ? url : url.slice(0, q)
  const prefix = pathname.endsWith(route.path) ? pathname.slice(0, pathname.length - route.path.length) : ''
  return `${clientScheme(req)}://${req.headers.host ?? '127.0.0.1'}${forwardedPrefix(req)}${prefix.replace(/\/+$/, '')}`
}

/** A path of plain segments (`/burnrate`, `/gw/ai/`): no empty, `.` or `..` segment, no quote, backslash or space. */
const PLAIN_PATH = /^(?:\/(?!\.{1,2}(?:\/|$))[A-Za-z0-9._~!$&'()*+;=:@%-]+)+\/?$/

/**
 * The path a reverse proxy serves Burnrate under and strips before passing a call on, as it says
 * in `X-Forwarded-Prefix` (Traefik's StripPrefix; nginx with `proxy_set_header X-Forwarded-Prefix
 * /burnrate;`): its first value when that is a plain path, without a trailing `/`; else ''.
 * Trusted from anyone for the reason clientScheme's headers are: it only goes into an address told
 * back to the same requester.
 */
function forwardedPrefix(req: IncomingMessage): string {
  const v = req.headers['x-forwarded-prefix']
  const first = (Array.isArray(v) ? v[0] : v)?.split(',')[0].trim() ?? ''
  return PLAIN_PATH.test(first) ? first.replace(/\/+$/, '') : ''
}

/**
 * An answer held whole until it ends, to be rewritten (CallShape.relink), and sent by `start` once
 * it is (or cannot be): what was held, whether it was rewritten, and whether it broke after the
 * provider had answered.
 */
export class HeldAnswer {
  private parts: Buffer[] = []
  size = 0

  constructor(private readonly start: (parts: Buffer[], rewritten: boolean, broken?: boolean) => void) {}

  /** A chunk of the answer; once it is larger than `RELINK_LIMIT`, what was held is sent as it came, not rewritten. */
  push(chunk: Buffer): void {
    this.parts.push(chunk)
    this.size += chunk.length
    if (this.size > RELINK_LIMIT) this.start(this.take(), false)
  }

  /** The answer ended: sent as `rewrite` makes it; unchanged (null) or not rewritable (it throws), byte for byte as it came. */
  end(rewrite: (text: string) => string | null): void {
    const whole = this.whole()
    let out: string | null = null
    try {
      out = rewrite(whole.toString('utf8'))
    } catch {
      // an answer that cannot be rewritten goes as it came
    }
    this.start([out === null ? whole : Buffer.from(out)], true)
  }

  /** The answer broke (the upstream failed, or went silent) after the provider had answered: what came goes on as it came. */
  broke(): void {
    this.start(this.take(), false, true)
  }

  /** What was held, as it came. */
  private take(): Buffer[] {
    const p = this.parts
    this.parts = []
    return p
  }

  /** What was held, in one buffer. */
  private whole(): Buffer {
    const p = this.take()
    return p.length === 1 ? p[0] : Buffer.concat(p, this.size)
  }
}
