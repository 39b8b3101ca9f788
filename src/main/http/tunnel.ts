import type { Agent } from 'node:http'
import { HttpsProxyAgent } from 'https-proxy-agent'
import { SocksProxyAgent } from 'socks-proxy-agent'

/**
 * A node:http agent that tunnels through `proxy`, for what speaks node:http (the WebSockets to
 * upstreams, the OTLP exporters): a CONNECT tunnel through an http(s) proxy (https-proxy-agent),
 * or a SOCKS5 one (socks-proxy-agent), as undici's ProxyAgent does for HTTP calls. Loaded only
 * behind a proxy. `ca` (a private CA) is trusted for the proxy's own TLS and for the TLS inside
 * the tunnel: both agents make that one from the request's options, which node:http merges with
 * the agent's `options`.
 */
export function tunnelAgent(proxy: string, o: { ca?: string[]; keepAlive?: boolean } = {}): Agent {
  const tls = o.ca ? { ca: o.ca } : {}
  // SOCKS5 with the host name resolved by the proxy (socks5h), as undici's SOCKS5 client sends it.
  const agent = /^socks/i.test(proxy)
    ? new SocksProxyAgent(proxy.replace(/^socks5?:/i, 'socks5h:'), { keepAlive: o.keepAlive, ...tls })
    : new HttpsProxyAgent(proxy, { keepAlive: o.keepAlive, ...tls })
  agent.options = { ...agent.options, ...tls }
  return agent
}
