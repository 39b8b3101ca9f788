import type { IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http'
import { headerName } from './call/undici'

const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-authenticate',
  'proxy-authorization',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'host',
])

function connectionTokens(headers: IncomingHttpHeaders): Set<string> | null {
  const c = headers.connection
  if (!c) return null
  // What nearly every client and upstream sends: no header names in it.
  if (c === 'keep-alive' || c === 'close' || c === 'Keep-Alive') return null
  const v = Array.isArray(c) ? c.join(',') : c
  const set = new Set<string>()
  for (const t of v.split(',')) {
    const s = t.trim().toLowerCase()
    if (s && s !== 'close' && s !== 'keep-alive') set.add(s)
  }
  return set.size ? set : null
}

/**
 * Headers for the upstream request: everything but hop-by-hop, `Host`, `X-Burnrate-*` and
 * `Cookie`. The proxy shares its origin with the dashboard, so a browser sends it the dashboard's
 * session cookie (and every other cookie it keeps for this host, whatever port set it); no
 * provider API takes cookies, and upstream cookies never reach clients (DROPPED_RESPONSE).
 */
export function upstreamRequestHeaders(headers: IncomingHttpHeaders, host: string): OutgoingHttpHeaders {
  const extra = connectionTokens(headers)
  const out: OutgoingHttpHeaders = {}
  for (const name in headers) {
    if (HOP_BY_HOP.has(name) || name === 'cookie' || name.startsWith('x-burnrate-') || extra?.has(name)) continue
    out[name] = headers[name]
  }
  out.host = host
  return out
}

/**
 * Upstream headers never passed to the client: cookies. The proxy answers on the same origin as
 * the dashboard, so an upstream cookie would land in the browser beside the dashboard's session
 * (and could overwrite it); API clients do not need them.
 */
const DROPPED_RESPONSE = new Set(['set-cookie', 'set-cookie2'])

/** Whether an upstream response header (lower-case name) goes on to the client: not hop-by-hop, not a cookie. */
function passesToClient(name: string): boolean {
  return !HOP_BY_HOP.has(name) && !DROPPED_RESPONSE.has(name)
}

/** Headers for the client's response: everything upstream sent but hop-by-hop ones and cookies. */
export function clientResponseHeaders(headers: IncomingHttpHeaders): OutgoingHttpHeaders {
  const extra = connectionTokens(headers)
  const out: OutgoingHttpHeaders = {}
  for (const name in headers) {
    if (!passesToClient(name) || extra?.has(name)) continue
    out[name] = headers[name]
  }
  return out
}

/** Headers whose repeats Node's own HTTP client drops (the first one counts); set-cookie stays a list; others are joined. */
const SINGLE = new Set([
  'age', 'authorization', 'content-length', 'content-type', 'etag', 'expires', 'from', 'host', 'if-modified-since',
  'if-unmodified-since', 'last-modified', 'location', 'max-forwards', 'proxy-authorization', 'referer', 'retry-after',
  'server', 'user-agent',
])

/** undici's raw response headers (name, value, ...) as Node's IncomingMessage would have them. */
export function parseRawHeaders(raw: readonly Buffer[]): IncomingHttpHeaders {
  return readRawHeaders(raw, null)
}

/**
 * The answer's headers as the client gets them: name and value in turn in one flat list, the
 * form `res.writeHead` takes as it is (an object would be built here only for Node to walk it
 * again). Names are lower-case, each at most once, in the order the upstream sent them.
 */
export class ClientHeaders {
  readonly list: string[] = []

  /** Sets `name` (lower-case): replaces its value where it is, or adds it at the end. */
  set(name: string, value: string): void {
    const i = this.indexOf(name)
    if (i < 0) this.list.push(name, value)
    else this.list[i + 1] = value
  }

  delete(name: string): void {
    const i = this.indexOf(name)
    if (i >= 0) this.list.splice(i, 2)
  }

  /** Where `name` is in the list, or -1. */
  private indexOf(name: string): number {
    const l = this.list
    for (let i = 0; i < l.length; i += 2) if (l[i] === name) return i
    return -1
  }

  /** As an object (what `clientResponseHeaders` gives), for tests and logs. */
  toObject(): OutgoingHttpHeaders {
    const out: OutgoingHttpHeaders = {}
    for (let i = 0; i < this.list.length; i += 2) out[this.list[i]] = this.list[i + 1]
    return out
  }
}

/**
 * An upstream answer's headers, read once: as Node would have them (`upstream`, for metering
 * and the plans' meters) and, in the same pass, what the client gets (`client`: exactly
 * `clientResponseHeaders(upstream)`, as a flat list), so the answer's critical path walks the
 * headers once.
 */
export function responseHeaders(raw: readonly Buffer[]): { upstream: IncomingHttpHeaders; client: ClientHeaders } {
  const client = new ClientHeaders()
  const upstream = readRawHeaders(raw, client)
  // Names the upstream's Connection header lists are hop-by-hop too (rare: known only at the end).
  const extra = connectionTokens(upstream)
  if (extra) for (const name of extra) client.delete(name)
  return { upstream, client }
}

function readRawHeaders(raw: readonly Buffer[], client: ClientHeaders | null): IncomingHttpHeaders {
  const out: IncomingHttpHeaders = {}
  for (let i = 0; i + 1 < raw.length; i += 2) {
    // Well-known names come as the same (internalised) strings every time, without lower-casing.
    const name = headerName(raw[i])
    const value = raw[i + 1].toString('latin1')
    const had = out[name]
    if (had === undefined) {
      if (name === 'set-cookie') {
        out[name] = [value]
        continue
      }
      out[name] = value
      if (client && passesToClient(name)) client.list.push(name, value)
    } else if (Array.isArray(had)) {
      had.push(value)
    } else if (!SINGLE.has(name)) {
      // A repeated header is joined, as Node's own client does (rare: its one entry is updated).
      const joined = `${had}, ${value}`
      out[name] = joined
      if (client && passesToClient(name)) client.set(name, joined)
    }
  }
  return out
}
