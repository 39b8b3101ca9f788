import type { IncomingMessage } from 'node:http'

type Scheme = 'http' | 'https'

/**
 * The scheme the client used to reach Burnrate. Burnrate serves plain HTTP, so behind a reverse
 * proxy or load balancer that ends TLS (the team setup) the socket says `http` while the client
 * used `https`: the proxy says so in `X-Forwarded-Proto` (its first value) or the standard
 * `Forwarded: proto=` (its first element). Only `http` and `https` are taken; anything else, or
 * neither header, leaves the socket's own scheme.
 *
 * Trusting these headers from anyone is safe here: the scheme only goes into an address told back
 * to the same requester (a relinked batch `results_url`), never into a decision, so a client that
 * forges them only misleads itself.
 */
export function clientScheme(req: IncomingMessage): Scheme {
  return (
    scheme(firstOf(req.headers['x-forwarded-proto'])) ??
    scheme(forwardedProto(firstOf(req.headers.forwarded))) ??
    ((req.socket as { encrypted?: boolean }).encrypted === true ? 'https' : 'http')
  )
}

function scheme(v: string | undefined): Scheme | undefined {
  const s = v?.trim().toLowerCase()
  return s === 'http' || s === 'https' ? s : undefined
}

/** The first of a list header's values (`https, http`, or repeated headers). */
function firstOf(v: string | string[] | undefined): string | undefined {
  const s = Array.isArray(v) ? v[0] : v
  return s === undefined ? undefined : firstElement(s)
}

/** Up to the first comma outside a quoted string. */
function firstElement(s: string): string {
  let quoted = false
  for (let i = 0; i < s.length; i++) {
    const c = s[i]
    if (c === '\\' && quoted) i++
    else if (c === '"') quoted = !quoted
    else if (c === ',' && !quoted) return s.slice(0, i)
  }
  return s
}

/** `proto` of one `Forwarded` element (`for=192.0.2.60;proto="https";by=…`), unquoted. */
function forwardedProto(element: string | undefined): string | undefined {
  for (const pair of element?.split(';') ?? []) {
    const eq = pair.indexOf('=')
    if (eq === -1 || pair.slice(0, eq).trim().toLowerCase() !== 'proto') continue
    const v = pair.slice(eq + 1).trim()
    return v.length >= 2 && v.startsWith('"') && v.endsWith('"') ? v.slice(1, -1) : v
  }
  return undefined
}
