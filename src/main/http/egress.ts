import type { Agent } from 'node:http'
import { createRequire } from 'node:module'
import type * as Undici from 'undici'
import type { Dispatcher } from 'undici'
import { type NetworkOptions, proxyRule, proxyTls, trustedCAs } from './network'
import { failClosedConnect } from './proxy-connect'
import { socksConnector } from './socks'

const require = createRequire(import.meta.url)

/**
 * Burnrate's own calls out (price updates, alert webhooks, reports to a team server, OTLP export) go the way
 * proxied calls do: through `upstream.proxy` / HTTPS_PROXY by the same rule (./network.ts),
 * trusting `upstream.ca_file`. Behind a proxy that allows nothing else out, they would
 * otherwise fail: prices going stale, alerts and team reports never arriving.
 */
export interface Egress {
  /** The dispatcher for a call to `url`; undefined: undici's global one (no proxy for it, no private CA). */
  for(url: string): Dispatcher | undefined
  /**
   * The same for a library that speaks node:http (the OTLP exporters): an agent, or null for the
   * usual one. Through a CONNECT tunnel, the proxy's answer and the TLS inside it must come within
   * `connectTimeoutMs`, and through a SOCKS5 proxy the negotiation and the TLS inside the tunnel
   * (10 s without it): the export's own timeout gives up on the request, not on the connection
   * being opened for it, which is closed when it is not open in time.
   */
  nodeAgent(url: string, connectTimeoutMs?: number): Promise<Agent> | null
  /** Whether a call to `url` goes through a proxy (nodeAgent's agent may be a private CA's alone). */
  proxied(url: string): boolean
  close(): Promise<void>
}

/** How long opening a connection through a SOCKS5 proxy may take: undici's connect timeout, as directly. */
const CONNECT_TIMEOUT_MS = 10_000

/** Every call out directly, with the usual certificate authorities. */
export const DIRECT: Egress = { for: () => undefined, nodeAgent: () => null, proxied: () => false, close: async () => {} }

export function createEgress(o: NetworkOptions): Egress {
  const rule = proxyRule(o)
  const ca = trustedCAs(o)
  if (!rule && !ca) return DIRECT
  const tls = ca ? { ca } : {}
  // One dispatcher per proxy ('' for direct with the private CA), made on first use: undici's
  // whole index is loaded only then.
  const made = new Map<string, Dispatcher>()
  const proxyFor = (url: string) => rule?.(url) ?? null
  return {
    for(url) {
      const proxy = proxyFor(url)
      if (!proxy && !ca) return undefined
      const key = proxy ?? ''
      let d = made.get(key)
      if (!d) {
        const { Agent, Pool, ProxyAgent } = require('undici') as typeof Undici
        // A proxy that closes the connection instead of answering CONNECT fails the call at once (./proxy-connect.ts).
        const clientFactory = (origin: URL | string, opts: object): Dispatcher => failClosedConnect(new Pool(origin, opts))
        // An http:// host goes to an http:// proxy as an ordinary request for its absolute URI, as
        // curl sends it (Squid's default configuration refuses CONNECT to any port but 443). Through
        // a SOCKS5 proxy, the negotiation and the TLS inside the tunnel within undici's usual
        // connect timeout (./socks.ts): undici's own SOCKS5 agent waited for that TLS for good.
        d = !proxy
          ? new Agent({ connect: tls })
          : /^socks/i.test(proxy)
            ? new Agent({ connect: socksConnector(proxy, CONNECT_TIMEOUT_MS, ca) })
            : new ProxyAgent({ uri: proxy, connect: tls, requestTls: tls, ...proxyTls(proxy, tls), clientFactory, proxyTunnel: false })
        made.set(key, d)
      }
      return d
    },
    nodeAgent(url, connectTimeoutMs) {
      const proxy = proxyFor(url)
      if (!proxy && !ca) return null
      if (!proxy) return import(new URL(url).protocol === 'https:' ? 'node:https' : 'node:http').then((m) => new m.Agent({ keepAlive: true, ...tls }))
      return import('./tunnel').then(({ egressAgent }) => egressAgent(proxy, url, { ...tls, keepAlive: true, connectTimeoutMs }))
    },
    proxied: (url) => proxyFor(url) !== null,
    async close() {
      const all = [...made.values()]
      made.clear()
      await Promise.all(all.map((d) => d.close().catch(() => {})))
    },
  }
}
