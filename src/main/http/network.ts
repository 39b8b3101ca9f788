import { BlockList, isIP } from 'node:net'
import { isLoopbackHost } from '../security/hosts'

/**
 * How Burnrate reaches the outside (the `upstream` config keys, and the environment): the
 * proxy and the trusted certificate authorities. One rule for every way out: proxied calls
 * (HTTP and WebSocket), price updates, alert webhooks and team reporting.
 */
export interface NetworkOptions {
  /** `upstream.proxy`: every call out goes through this proxy (http://user:password@host:port); else HTTPS_PROXY/HTTP_PROXY. */
  proxy?: string
  /** `upstream.no_proxy`: hosts reached directly (`name`, `.domain`, `name:port`, `*`); else NO_PROXY. */
  no_proxy?: readonly string[]
  /** Certificate authorities (PEM) trusted besides the usual ones: `upstream.ca_file`'s contents. */
  ca?: readonly string[]
}

/**
 * A proxy variable's value as a URL: `proxy.corp:3128` is `http://proxy.corp:3128`, as curl
 * reads it; null for what is not the address of an http(s) or SOCKS5 proxy.
 */
export function proxyUrl(value: string): string | null {
  const v = value.trim()
  const url = /^[a-z][a-z0-9+.-]*:\/\//i.test(v) ? v : `http://${v}`
  try {
    const u = new URL(url)
    return /^(https?|socks5?|socks5h):$/.test(u.protocol) && u.hostname ? socks5(url) : null
  } catch {
    return null
  }
}

/**
 * `socks5h://` (curl's name for a SOCKS5 proxy that resolves the host names, what an `ssh -D`
 * tunnel is usually given as) as `socks5://`: Burnrate's SOCKS5 clients always let the proxy
 * resolve them, and undici knows only `socks5:` (it took any other scheme for an HTTP proxy).
 */
function socks5(url: string): string {
  return url.replace(/^socks5h:/i, 'socks5:')
}

const ENV_PROXIES = [
  ['https_proxy', 'HTTPS_PROXY'],
  ['http_proxy', 'HTTP_PROXY'],
] as const

/** The environment's proxy variable of a pair (lower case first, as curl and undici read them), as a usable URL. */
function envProxy(env: NodeJS.ProcessEnv, [lower, upper]: readonly [string, string]): string | undefined {
  const v = env[lower] || env[upper]
  return (v && proxyUrl(v)) || undefined
}

/**
 * A proxy variable as it may be logged: everything before its last `@` (user and password) is
 * hidden, the scheme kept. The value is malformed, so no URL parser can be trusted to find the
 * credentials (a `/` or `@` in the password, no scheme, a bad port).
 */
function withoutCredentials(v: string): string {
  const at = v.lastIndexOf('@')
  if (at === -1) return v
  const scheme = /^[a-z][a-z0-9+.-]*:\/\//i.exec(v)?.[0] ?? ''
  return `${scheme}***${v.slice(at)}`
}

/** Proxy variables set to something that is not a proxy's address (ignored: said once at start-up), with any password hidden. */
export function proxyProblems(o: NetworkOptions, env: NodeJS.ProcessEnv = process.env): string[] {
  if (o.proxy) return []
  const out: string[] = []
  for (const pair of ENV_PROXIES) {
    const name = env[pair[0]] ? pair[0] : pair[1]
    const v = env[name]
    if (v && !proxyUrl(v)) out.push(`${name}=${withoutCredentials(v)} is not the address of an http(s) or SOCKS5 proxy; it is ignored`)
  }
  return out
}

/** The proxy settings in effect: the config's, else the standard environment variables; null for none. */
export function proxySettings(o: NetworkOptions, env: NodeJS.ProcessEnv = process.env): { httpProxy?: string; httpsProxy?: string; noProxy: string } | null {
  if (o.proxy) {
    const proxy = socks5(o.proxy)
    return { httpProxy: proxy, httpsProxy: proxy, noProxy: (o.no_proxy ?? []).join(',') }
  }
  const httpsProxy = envProxy(env, ENV_PROXIES[0])
  const httpProxy = envProxy(env, ENV_PROXIES[1])
  if (!httpsProxy && !httpProxy) return null
  const noProxy = [env.no_proxy || env.NO_PROXY || '', ...(o.no_proxy ?? [])].filter(Boolean).join(',')
  // Without HTTPS_PROXY, https upstreams go through HTTP_PROXY too (as curl and undici do).
  return { httpProxy, httpsProxy: httpsProxy ?? httpProxy, noProxy }
}

/** The proxy that carries calls to an origin (`https://api.openai.com`, `wss://…`; any URL of it will do), or null: directly. */
export type ProxyRule = (origin: string) => string | null

const DEFAULT_PORTS: Record<string, number> = { 'http:': 80, 'https:': 443, 'ws:': 80, 'wss:': 443 }

/**
 * The proxy rule of `o` and the environment, as undici's EnvHttpProxyAgent applies NO_PROXY (and
 * curl): entries split at commas or spaces, each a host name (a leading `.` or `*.` ignored, and a
 * trailing `.`, on the host too) that matches itself and its subdomains, optionally with `:port`, or
 * an IP address, matched whole; `*` means no proxy at
 * all. https and wss origins take the HTTPS proxy, http and ws the HTTP one. Null when no
 * proxy is set: every call goes directly. This machine's own addresses (`localhost`, 127.0.0.0/8,
 * `::1`: a local model server, a gateway on this machine) are always reached directly, as Go's
 * HTTP client does: a proxy elsewhere cannot reach them.
 */
export function proxyRule(o: NetworkOptions, env: NodeJS.ProcessEnv = process.env): ProxyRule | null {
  const s = proxySettings(o, env)
  if (!s) return null
  const direct = noProxyMatcher(s.noProxy, true)
  if (!direct) return null
  return (origin) => {
    const url = new URL(origin)
    if (isLoopbackHost(url.hostname) || direct(url)) return null
    const secure = url.protocol === 'https:' || url.protocol === 'wss:'
    return (secure ? s.httpsProxy : s.httpProxy) ?? null
  }
}

/**
 * Whether a NO_PROXY list sends `url` directly; null when it holds `*` (everything directly). With
 * `ranges`, an address range in CIDR notation (`10.0.0.0/8`, `fd00::/8`), as curl, Go, Python's
 * requests and Rust's reqwest read it, sends every address in it directly.
 */
function noProxyMatcher(noProxy: string, ranges: boolean): ((url: URL) => boolean) | null {
  const all = noProxy.split(/[,\s]/).filter(Boolean)
  // `*` anywhere: the environment's NO_PROXY=* joined with the config's own entries is still everything.
  if (all.includes('*')) return null
  const cidr = ranges ? addressRanges(all) : null
  const list = cidr ? all.filter((e) => !cidr.entries.has(e)) : all
  const entries = list.map((entry) => {
    // A bare IPv6 address (fd00::5) has colons but no port: as the URL writes it, in brackets.
    if (!entry.startsWith('[') && entry.indexOf(':') !== entry.lastIndexOf(':')) return { host: ipv6Host(entry), port: 0 }
    const m = /^(.+):(\d+)$/.exec(entry)
    const host = (m ? m[1] : entry).replace(/^\*?\./, '').replace(/\.$/, '').toLowerCase()
    return { host: host.startsWith('[') ? ipv6Host(host.slice(1, -1)) : host, port: m ? Number(m[2]) : 0 }
  })
  return (url) => {
    // The host without its port (keeping an IPv6 address's brackets) nor a fully qualified name's last dot.
    const host = url.host.replace(/:\d*$/, '').replace(/\.$/, '').toLowerCase()
    const port = Number(url.port) || DEFAULT_PORTS[url.protocol] || 0
    // An address is matched whole, never as a name's subdomain (curl: `0.0.1` is not 10.0.0.1's domain).
    const address = isIP(host.replace(/^\[|\]$/g, '')) !== 0
    if (entries.some((e) => (!e.port || e.port === port) && (host === e.host || (!address && host.endsWith(`.${e.host}`))))) return true
    return cidr !== null && cidr.has(host.replace(/^\[|\]$/g, ''))
  }
}

/**
 * An IPv6 address as the URL writes it (in brackets, shortest form): the URL of
 * `http://[::ffff:10.0.0.1]` has the host `[::ffff:a00:1]`, which the entry `::ffff:10.0.0.1`
 * never equalled as written (curl, which keeps the host as given, matches it).
 */
function ipv6Host(address: string): string {
  try {
    return new URL(`http://[${address}]/`).host
  } catch {
    return `[${address.toLowerCase()}]`
  }
}

/** The CIDR entries of a NO_PROXY list (`10.0.0.0/8`, `[fd00::]/8`), and whether an address is in one of them; null when it has none. */
function addressRanges(list: readonly string[]): { entries: Set<string>; has(address: string): boolean } | null {
  const blocks = new BlockList()
  const entries = new Set<string>()
  for (const entry of list) {
    const m = /^\[?([0-9a-f.:]+)\]?\/(\d{1,3})$/i.exec(entry)
    const v = m ? isIP(m[1]) : 0
    if (!m || !v || Number(m[2]) > (v === 4 ? 32 : 128)) continue
    blocks.addSubnet(m[1], Number(m[2]), v === 4 ? 'ipv4' : 'ipv6')
    entries.add(entry)
  }
  if (entries.size === 0) return null
  return {
    entries,
    has: (address) => {
      const v = isIP(address)
      return v !== 0 && blocks.check(address, v === 4 ? 'ipv4' : 'ipv6')
    },
  }
}

export const AGENT_PROXY_VARS = ['HTTPS_PROXY', 'https_proxy', 'HTTP_PROXY', 'http_proxy', 'ALL_PROXY', 'all_proxy'] as const

/**
 * The proxy variable in `env` that would carry an agent's calls to Burnrate at `url` (its own
 * address, on this machine) to a proxy, which cannot reach it; null when none would. Agents
 * disagree on which variable serves an http:// address (Claude Code and Gemini CLI take
 * HTTPS_PROXY for it too, Codex and opencode do not), so any of them counts, unless NO_PROXY
 * lists the host; in both spellings when both are set, since agents differ in which they read.
 */
export function agentProxyFor(url: string, env: NodeJS.ProcessEnv): string | null {
  const name = AGENT_PROXY_VARS.find((v) => env[v])
  if (!name) return null
  const lists = [env.NO_PROXY, env.no_proxy].filter((v): v is string => !!v)
  const exempt = (list: string) => {
    // Ranges do not count: Node's clients (undici's EnvHttpProxyAgent) do not read them.
    const direct = noProxyMatcher(list, false)
    return !direct || direct(new URL(url))
  }
  return lists.length > 0 && lists.every(exempt) ? null : name
}

/** A private CA is added to the usual ones (Node's bundle plus NODE_EXTRA_CA_CERTS), never instead of them; undefined when there is none. */
export function trustedCAs(o: NetworkOptions): string[] | undefined {
  return o.ca?.length ? [...defaultCAs(), ...o.ca] : undefined
}

function defaultCAs(): string[] {
  // node:tls loads here (only with a CA file) or with undici, never at start-up.
  const tls = process.getBuiltinModule('node:tls')
  return tls.getCACertificates ? tls.getCACertificates('default') : [...tls.rootCertificates]
}

/**
 * The TLS options for the connection to the proxy itself, for an https:// proxy (an http:// one
 * ignores them). undici reads them as "speak TLS to the proxy" for a SOCKS5 proxy, which then
 * never answers: none for it.
 */
export function proxyTls<T>(proxy: string, tls: T): { proxyTls?: T } {
  return /^socks/i.test(proxy) ? {} : { proxyTls: tls }
}
