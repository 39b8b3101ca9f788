import { isIPv4, isIPv6 } from 'node:net'
import { networkInterfaces } from 'node:os'

/**
 * Which `Host` (and `Origin`) values name this server. A DNS-rebinding page reaches
 * 127.0.0.1 under its own domain name, so its requests carry that name in `Host`; only the
 * configured address, `localhost`, loopback IPs and names the user lists are accepted.
 */

/** True for `localhost`, 127.0.0.0/8 and ::1 (the addresses only this machine can reach). */
export function isLoopbackHost(host: string): boolean {
  const h = stripBrackets(host).toLowerCase()
  if (h === 'localhost' || h === '::1' || h === '0:0:0:0:0:0:0:1') return true
  return isIPv4(h) && h.startsWith('127.')
}

/** True for the addresses that listen on every interface. */
export function isWildcardHost(host: string): boolean {
  const h = stripBrackets(host)
  return h === '0.0.0.0' || h === '::' || h === ''
}

/**
 * The host to put in a URL that reaches a server listening on `listenHost`: 127.0.0.1 for
 * `localhost` (both loopbacks are listened on) and for every-interface addresses; `[::1]` for
 * the IPv6 loopback (127.0.0.1 refuses connections there); the address itself otherwise.
 */
export function answeringHost(listenHost: string): string {
  const h = stripBrackets(listenHost).toLowerCase()
  if (h === 'localhost' || h === '0.0.0.0' || h === '') return '127.0.0.1'
  if (h === '::' || h === '::1' || h === '0:0:0:0:0:0:0:1') return '[::1]'
  return isIPv6(h) ? `[${h}]` : h
}

export function stripBrackets(h: string): string {
  return h.length > 1 && h.charCodeAt(0) === 91 /* [ */ && h.endsWith(']') ? h.slice(1, -1) : h
}

/** Splits `name:port` / `[v6]:port` / `name`; null when it is not a host at all. */
export function splitHostPort(value: string): { host: string; port: number | null } | null {
  if (value.length === 0 || value.length > 300) return null
  let host: string
  let rest: string
  if (value.charCodeAt(0) === 91) {
    const close = value.indexOf(']')
    if (close === -1) return null
    host = value.slice(1, close)
    if (!isIPv6(host)) return null
    rest = value.slice(close + 1)
  } else {
    const colon = value.indexOf(':')
    host = colon === -1 ? value : value.slice(0, colon)
    rest = colon === -1 ? '' : value.slice(colon)
    if (!/^[A-Za-z0-9._-]+$/.test(host)) return null
  }
  if (rest === '') return { host: host.toLowerCase(), port: null }
  if (!/^:\d{1,5}$/.test(rest)) return null
  const port = Number(rest.slice(1))
  return port <= 65535 ? { host: host.toLowerCase(), port } : null
}

export interface HostPolicyOptions {
  /** `server.host` as configured. */
  configuredHost: string
  /** Extra names (`name` for any port in Host, `name:port` for one; ./HostPolicy.allowsOrigin for a page's). */
  allowedHosts: readonly string[]
  /** Extra origins allowed to call from a browser (`http://localhost:5173`). */
  allowedOrigins: readonly string[]
  /** Addresses of this machine's interfaces (for a wildcard bind); defaults to the live list. */
  interfaceAddresses?: readonly string[]
}

/** Decides whether a `Host` or `Origin` names this server, listening on `port`. */
export class HostPolicy {
  private readonly exact = new Set<string>()
  private readonly anyPort = new Set<string>()
  private readonly origins: Set<string>

  constructor(opts: HostPolicyOptions) {
    const configured = stripBrackets(opts.configuredHost).toLowerCase()
    this.exact.add(configured)
    if (isWildcardHost(configured)) {
      for (const a of opts.interfaceAddresses ?? localAddresses()) this.exact.add(a.toLowerCase())
    }
    for (const entry of opts.allowedHosts) {
      const hp = splitHostPort(entry.trim())
      if (!hp) continue
      if (hp.port === null) this.anyPort.add(hp.host)
      else this.exact.add(`${hp.host}#${hp.port}`)
    }
    this.origins = new Set(opts.allowedOrigins.map((o) => o.trim().toLowerCase().replace(/\/+$/, '')))
  }

  /** Is `value` (a Host header) one of this server's names at `port`? */
  allowsHost(value: string | undefined, port: number): boolean {
    if (!value) return false
    // Every call names the same few hosts: the answer is remembered (for the port it was given).
    if (port !== this.memoPort) {
      this.memo.clear()
      this.memoPort = port
    }
    let ok = this.memo.get(value)
    if (ok === undefined) {
      ok = this.checkHost(value, port)
      if (this.memo.size >= 256) this.memo.clear()
      this.memo.set(value, ok)
    }
    return ok
  }

  private readonly memo = new Map<string, boolean>()
  private memoPort = -1

  private checkHost(value: string, port: number): boolean {
    const hp = splitHostPort(value)
    if (!hp) return false
    if (this.anyPort.has(hp.host)) return true
    if (this.exact.has(`${hp.host}#${hp.port ?? 80}`)) return true
    const effective = hp.port ?? 80
    if (effective !== port) return false
    return isLoopbackHost(hp.host) || this.exact.has(hp.host)
  }

  /**
   * Is `origin` (an Origin header) this server's own page, or one the user allowed? A page's
   * origin is its name and port: a name `server.allowed_hosts` lists alone is answered in `Host`
   * at any port, but its page is this server's only at the port this server is opened at (below).
   * Another web app on the same name at another port is another origin, which a browser still
   * calls same-site (it sends the SameSite=Strict session along).
   */
  allowsOrigin(origin: string, port: number): boolean {
    const o = origin.toLowerCase()
    if (this.origins.has(o)) return true
    if (o.startsWith('https://')) return this.allowsTlsFront(o.slice(8))
    if (!o.startsWith('http://')) return false
    return this.allowsPlainPage(o.slice(7), port)
  }

  /**
   * For an origin allowsOrigin refused: `name:port` (its `server.allowed_hosts` entry) when its
   * name is one of this server's, not a loopback name, so that only its port kept it out (a
   * reverse proxy's page at another port, or another web app on that name); else null.
   */
  ownNameAt(origin: string): string | null {
    const m = /^(https?):\/\/(.*)$/.exec(origin.toLowerCase())
    const hp = m ? splitHostPort(m[2]) : null
    if (!m || !hp || isLoopbackHost(hp.host) || !(this.exact.has(hp.host) || this.anyPort.has(hp.host))) return null
    return `${isIPv6(hp.host) ? `[${hp.host}]` : hp.host}:${hp.port ?? (m[1] === 'https' ? 443 : 80)}`
  }

  /**
   * An http:// page is this server's own at one of its names at the port it listens on (80 when
   * the page names none), or at a `name:port` the user listed (a port mapped to this one).
   */
  private allowsPlainPage(value: string, port: number): boolean {
    const hp = splitHostPort(value)
    if (!hp) return false
    const effective = hp.port ?? 80
    if (this.exact.has(`${hp.host}#${effective}`)) return true
    if (effective !== port) return false
    return isLoopbackHost(hp.host) || this.exact.has(hp.host) || this.anyPort.has(hp.host)
  }

  /**
   * An https:// page is this server's own only behind a TLS proxy (Burnrate serves plain HTTP),
   * so only at a name the user listed in `server.allowed_hosts`: at 443 (the port a page names
   * when it names none) for `name`, at its port for `name:port`. (`server.public_url` names any
   * other.) Never a loopback name by itself: https on this machine is some other program.
   */
  private allowsTlsFront(value: string): boolean {
    const hp = splitHostPort(value)
    if (!hp) return false
    const effective = hp.port ?? 443
    return (this.anyPort.has(hp.host) && effective === 443) || this.exact.has(`${hp.host}#${effective}`)
  }
}

function localAddresses(): string[] {
  const out: string[] = []
  for (const list of Object.values(networkInterfaces())) {
    for (const a of list ?? []) out.push(a.address.replace(/%.*$/, ''))
  }
  return out
}
