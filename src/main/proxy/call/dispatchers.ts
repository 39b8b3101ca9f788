import type { Dispatcher, buildConnector } from 'undici'
import { type NetworkOptions, proxyRule, proxyTls, trustedCAs } from '../../http/network'
import { failClosedConnect } from '../../http/proxy-connect'
import { socksConnector } from '../../http/socks'
import { readsAnswerFirst } from './early-answer'
import { agentClass, clientClass, connectorBuilder, poolClass, proxyAgent } from './undici'
import type { Upstream } from '../routes'

export type { NetworkOptions } from '../../http/network'

/** The connections to upstreams: one dispatcher per upstream, closed at shutdown. */
export interface UpstreamDispatchers {
  for(upstream: Upstream): Dispatcher
  /** A dispatcher on a new connection for one call (a retry); it closes itself once that call is done. */
  fresh(upstream: Upstream): Dispatcher
  close(): Promise<void>
}

/** The most of an upstream answer's headers taken, in bytes. */
export const MAX_ANSWER_HEADERS = 256 * 1024

export interface DispatcherOptions extends NetworkOptions {
  connect_timeout_ms: number
}

/**
 * One keep-alive connection pool per upstream. Its own timeouts are off but the connect one:
 * the first-byte and idle timeouts are the call's (dispatch-handler.ts, response.ts). Behind a proxy
 * (upstream.proxy or HTTPS_PROXY/HTTP_PROXY), an upstream the proxy rule sends through it
 * (http/network.ts, the same rule as WebSockets') is carried by one undici ProxyAgent per proxy:
 * an https upstream through a CONNECT tunnel, an http one (a self-hosted model server) as curl, Go
 * and Python's requests send it, an ordinary request for its absolute URI (Squid's default
 * configuration refuses CONNECT to any port but 443); a no-proxy host keeps its own pool. Through
 * a SOCKS5 proxy, one undici Agent per proxy whose pools connect through it (../../http/socks.ts),
 * the SOCKS5 negotiation and the TLS inside the tunnel held to the connect timeout together.
 */
export function createUpstreamDispatchers(o: DispatcherOptions): UpstreamDispatchers {
  // Each upstream's dispatcher: its pool, or the agent of the proxy that carries it.
  const pools = new Map<Upstream, Dispatcher>()
  const proxied = new Set<Dispatcher>()
  const viaProxy = new Map<string, Dispatcher>()
  const ca = trustedCAs(o)
  const connect = { timeout: o.connect_timeout_ms, ...(ca ? { ca } : {}) }
  // An answer's headers up to MAX_ANSWER_HEADERS (undici's default, 16 KiB, refused a gateway's long
  // policy or cookie headers: the call answered and billed upstream was told the client as 'Could not reach').
  const common = { keepAliveTimeout: 30_000, headersTimeout: 0, bodyTimeout: 0, maxHeaderSize: MAX_ANSWER_HEADERS, connect }
  // Every connection reads an answer that came while the body was still being sent (./early-answer.ts):
  // a direct pool's or client's from its own connector, as undici would make it from `connect`.
  const direct = () => ({ connect: readsAnswerFirst(connectorBuilder()(connect)) })
  const proxyOf = proxyRule(o)
  const forUpstream = (u: Upstream): Dispatcher => {
    const proxy = proxyOf?.(u.origin)
    if (!proxy) return new (poolClass())(u.origin, { ...common, ...direct() })
    let agent = viaProxy.get(proxy)
    if (!agent && /^socks/i.test(proxy)) {
      agent = new (agentClass())({ ...common, connect: readsAnswerFirst(socksConnector(proxy, o.connect_timeout_ms, ca)) })
      viaProxy.set(proxy, agent)
      proxied.add(agent)
    }
    if (!agent) {
      // The proxy's answer to CONNECT is part of opening the connection: held to the connect timeout
      // (undici's own wait for it is its 300 s headers timeout, far past what the call allows for that).
      // A proxy that closes the connection instead of answering fails the call at once (../../http/proxy-connect.ts).
      const clientFactory = (origin: URL | string, opts: object): Dispatcher => failClosedConnect(new (poolClass())(origin, { ...opts, headersTimeout: o.connect_timeout_ms }))
      // The pools to upstreams through a tunnel, and (for http upstreams, `proxyTunnel: false`) to
      // the proxy itself, which then answers for the upstream: the common options, not undici's defaults.
      const factory = (origin: URL | string, opts: object): Dispatcher => new (poolClass())(origin, { ...common, ...opts, ...throughProxy(opts) })
      agent = new (proxyAgent())({ ...common, uri: proxy, requestTls: connect, ...proxyTls(proxy, connect), clientFactory, factory, proxyTunnel: false })
      viaProxy.set(proxy, agent)
      proxied.add(agent)
    }
    return agent
  }
  const dispatcherOf = (u: Upstream): Dispatcher => {
    let p = pools.get(u)
    if (!p) {
      p = forUpstream(u)
      pools.set(u, p)
    }
    return p
  }
  return {
    for: dispatcherOf,
    fresh(u) {
      const shared = dispatcherOf(u)
      if (proxied.has(shared)) return shared
      const c = new (clientClass())(u.origin, { ...common, ...direct() })
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
      const all = new Set([...pools.values(), ...viaProxy.values()])
      pools.clear()
      viaProxy.clear()
      await Promise.all([...all].map((p) => p.destroy().catch(() => {})))
    },
  }
}

/** A proxy's connections (its tunnels, or to the proxy itself: `opts.connect`) read an early answer too (./early-answer.ts). */
function throughProxy(opts: { connect?: unknown }): { connect?: buildConnector.connector } {
  return typeof opts.connect === 'function' ? { connect: readsAnswerFirst(opts.connect as buildConnector.connector) } : {}
}
