import tls from 'node:tls'
import type { Dispatcher, EnvHttpProxyAgent as ProxyAgent } from 'undici'
import { Client, Pool, envHttpProxyAgent } from './undici'
import type { Upstream } from '../routes'

/** The connections to upstreams: one dispatcher per upstream, closed at shutdown. */
export interface UpstreamDispatchers {
  for(upstream: Upstream): Dispatcher
  /** A dispatcher on a new connection for one call (a retry); it closes itself once that call is done. */
  fresh(upstream: Upstream): Dispatcher
  close(): Promise<void>
}

/** How upstreams are reached (the `upstream` config keys, and the environment). */
export interface NetworkOptions {
  /** `upstream.proxy`: every upstream call goes through this proxy (http://user:password@host:port); else HTTPS_PROXY/HTTP_PROXY. */
  proxy?: string
  /** `upstream.no_proxy`: hosts reached directly (`name`, `.domain`, `name:port`, `*`); else NO_PROXY. */
  no_proxy?: readonly string[]
  /** Certificate authorities (PEM) trusted besides the usual ones: `upstream.ca_file`'s contents. */
  ca?: readonly string[]
}

export interface DispatcherOptions extends NetworkOptions {
  connect_timeout_ms: number
}

/** The proxy settings in effect: the config's, else the standard environment variables; null for none. */
export function proxySettings(o: NetworkOptions, env: NodeJS.ProcessEnv = process.env): { httpProxy?: string; httpsProxy?: string; noProxy: string } | null {
  if (o.proxy) return { httpProxy: o.proxy, httpsProxy: o.proxy, noProxy: (o.no_proxy ?? []).join(',') }
  const httpsProxy = env.https_proxy || env.HTTPS_PROXY || undefined
  const httpProxy = env.http_proxy || env.HTTP_PROXY || undefined
  if (!httpsProxy && !httpProxy) return null
  const noProxy = [env.no_proxy || env.NO_PROXY || '', ...(o.no_proxy ?? [])].filter(Boolean).join(',')
  // Without HTTPS_PROXY, https upstreams go through HTTP_PROXY too (as curl and undici do).
  return { httpProxy, httpsProxy: httpsProxy ?? httpProxy, noProxy }
}

/**
 * One keep-alive connection pool per upstream. Its own timeouts are off but the connect one:
 * the first-byte and idle timeouts are the call's (forward.ts, response.ts). Behind a proxy
 * (upstream.proxy or HTTPS_PROXY/HTTP_PROXY), one undici EnvHttpProxyAgent carries every
 * upstream: through the proxy with a CONNECT tunnel, or directly for the no-proxy hosts.
 */
export function createUpstreamDispatchers(o: DispatcherOptions): UpstreamDispatchers {
  const pools = new Map<Upstream, Dispatcher>()
  const ca = trustedCAs(o)
  const connect = { timeout: o.connect_timeout_ms, ...(ca ? { ca } : {}) }
  const common = { keepAliveTimeout: 30_000, headersTimeout: 0, bodyTimeout: 0, connect }
  const proxy = proxySettings(o)
  let viaProxy: ProxyAgent | null = null
  if (proxy) {
    viaProxy = new (envHttpProxyAgent())({ ...common, ...proxy, requestTls: connect, proxyTls: connect })
  }
  return {
    for(u) {
      if (viaProxy) return viaProxy
      let p = pools.get(u)
      if (!p) {
        p = new Pool(u.origin, common)
        pools.set(u, p)
      }
      return p
    },
    fresh(u) {
      if (viaProxy) return viaProxy
      const c = new Client(u.origin, common)
      const dispatch = c.dispatch.bind(c)
      // Closes once the one call it carries is done.
      c.dispatch = (opts, handler) => {
        const r = dispatch(opts, handler)
        void c.close().catch(() => {})
        return r
      }
      return c
    },
    async close() {
      const all = [...pools.values(), ...(viaProxy ? [viaProxy] : [])]
      pools.clear()
      viaProxy = null
      await Promise.all(all.map((p) => p.destroy().catch(() => {})))
    },
  }
}

/** A private CA is added to the usual ones (Node's bundle plus NODE_EXTRA_CA_CERTS), never instead of them; undefined when there is none. */
export function trustedCAs(o: NetworkOptions): string[] | undefined {
  return o.ca?.length ? [...defaultCAs(), ...o.ca] : undefined
}

function defaultCAs(): string[] {
  return tls.getCACertificates ? tls.getCACertificates('default') : [...tls.rootCertificates]
}
