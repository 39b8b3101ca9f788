import { Agent as HttpAgent } from 'node:http'
import type { Agent, ClientRequest } from 'node:http'
import { Agent as HttpsAgent } from 'node:https'
import { HttpProxyAgent } from 'http-proxy-agent'
import { HttpsProxyAgent } from 'https-proxy-agent'
import { PROXY_MALFORMED } from './proxy-connect'
import { socksConnection } from './socks'

/**
 * A node:http agent that tunnels through the HTTP(S) proxy `proxy` with CONNECT (https-proxy-agent),
 * for what speaks node:http (the WebSockets to upstreams, the OTLP exporters), as undici's
 * ProxyAgent does for HTTP calls. Loaded only behind a proxy. `ca` (a private CA) is trusted for
 * the proxy's own TLS and for the TLS inside the tunnel: the agent makes that one from the
 * request's options, which node:http merges with the agent's `options`. With `connectTimeoutMs`,
 * the proxy must answer CONNECT, and the TLS inside the tunnel complete, within it. Through a
 * SOCKS5 proxy, the connections are opened by ./socks.ts instead (`egressAgent`, and the upgrades
 * to upstreams in ../proxy/ws/ws-library.ts).
 */
export function tunnelAgent(proxy: string, o: { ca?: string[]; keepAlive?: boolean; connectTimeoutMs?: number } = {}): Agent {
  const tls = o.ca ? { ca: o.ca } : {}
  const agent = o.connectTimeoutMs
    ? new TimedProxyAgent(proxy, { keepAlive: o.keepAlive, ...tls }, o.connectTimeoutMs)
    : new HttpsProxyAgent(proxy, { keepAlive: o.keepAlive, ...tls })
  agent.options = { ...agent.options, ...tls }
  return agent
}

/** How long opening a connection through a SOCKS5 proxy may take when the caller names no limit: undici's connect timeout. */
const SOCKS_CONNECT_TIMEOUT_MS = 10_000

/**
 * The node:http agent for Burnrate's own calls to `url` through `proxy` (the OTLP export): to an
 * http:// address through an http:// proxy, an ordinary request for its absolute URI with the
 * proxy URL's credentials (http-proxy-agent), as curl and undici's calls send it (Squid's default
 * configuration refuses CONNECT to any port but 443); through a SOCKS5 proxy, each connection
 * opened by ./socks.ts, the SOCKS5 negotiation and the TLS inside the tunnel together within
 * `connectTimeoutMs` and the connection to the proxy closed when they are not done in time, as
 * Burnrate's other calls out through it (socks-proxy-agent gave the negotiation 30 s whatever the
 * export's own timeout, each failed export leaving its connection open that long); otherwise a
 * CONNECT tunnel (`tunnelAgent`).
 */
export function egressAgent(proxy: string, url: string, o: { ca?: string[]; keepAlive?: boolean; connectTimeoutMs?: number } = {}): Agent {
  const secure = new URL(url).protocol === 'https:'
  if (/^socks/i.test(proxy)) {
    // An https:// address needs an agent node:https takes (its protocol), whose options (the CAs) go into the TLS options.
    const agent = secure ? new HttpsAgent({ keepAlive: o.keepAlive, ...(o.ca ? { ca: o.ca } : {}) }) : new HttpAgent({ keepAlive: o.keepAlive })
    agent.createConnection = socksConnection(proxy, secure, o.connectTimeoutMs ?? SOCKS_CONNECT_TIMEOUT_MS) as HttpAgent['createConnection']
    return agent
  }
  if (!secure && /^http:/i.test(proxy)) return new HttpProxyAgent(proxy, { keepAlive: o.keepAlive })
  return tunnelAgent(proxy, o)
}

/**
 * https-proxy-agent waits for the proxy's answer to CONNECT for good, and node:http times a
 * request only once it has its socket, which is after that answer: a proxy that never answers
 * would hold the request, and the connection to it, forever. It then hands node:http the TLS
 * socket to a wss:// upstream before its handshake inside the tunnel is done, which nothing
 * timed but the whole upgrade's limit (connect + first byte, over ten minutes by default): a
 * proxy that answered CONNECT and then passed nothing on held the upgrade as long. Here the
 * connection to the proxy is closed when the CONNECT answer and the TLS handshake after it have
 * not both come within `ms`, and the request fails with an error that says it timed out.
 */
class TimedProxyAgent extends HttpsProxyAgent<string> {
  constructor(
    proxy: string,
    opts: ConstructorParameters<typeof HttpsProxyAgent<string>>[1],
    private readonly ms: number,
  ) {
    super(proxy, opts)
  }

  override connect(req: ClientRequest, opts: Parameters<HttpsProxyAgent<string>['connect']>[1]): ReturnType<HttpsProxyAgent<string>['connect']> {
    const stop = new AbortController()
    // What the proxy answered CONNECT with, when it is not an HTTP status line (see below).
    let notHttp = false
    req.once('proxyConnect', (c: { statusCode: number }) => {
      notHttp = !Number.isInteger(c.statusCode) || c.statusCode < 100 || c.statusCode > 599
    })
    const saved = this.connectOpts
    // The connection to the proxy is opened before connect() first waits: it takes the signal.
    this.connectOpts = { ...saved, signal: stop.signal }
    let tunnel: ReturnType<HttpsProxyAgent<string>['connect']>
    try {
      tunnel = super.connect(req, opts)
    } finally {
      this.connectOpts = saved
    }
    const started = Date.now()
    const timer = setTimeout(() => stop.abort(new Error(`the proxy did not answer its CONNECT request within ${this.ms} ms: timed out`)), this.ms)
    timer.unref()
    return tunnel.then(
      (socket) => {
        clearTimeout(timer)
        // A CONNECT answered with what is not HTTP: https-proxy-agent would hand the request that
        // answer to parse, and the parser's error read as the upstream's answer (one that may have
        // been billed there), for an upgrade that never left.
        if (notHttp) {
          socket.destroy()
          throw Object.assign(new Error('the proxy answered its CONNECT request with what is not HTTP/1.1'), { code: PROXY_MALFORMED })
        }
        // Not TLS: a plain tunnel, or the stand-in socket for a proxy's refusal (its status goes on to the request).
        if (!opts.secureEndpoint || !(socket as { encrypted?: boolean }).encrypted) return socket
        // The rest of the time for the TLS handshake inside the tunnel; the TLS socket closes the tunnel with it.
        return new Promise<typeof socket>((resolve, reject) => {
          const done = (err?: Error): void => {
            clearTimeout(tls)
            socket.removeListener('secureConnect', onSecure)
            socket.removeListener('error', done)
            if (err) {
              socket.destroy()
              reject(err)
            } else resolve(socket)
          }
          const onSecure = (): void => done()
          const left = Math.max(0, this.ms - (Date.now() - started))
          const tls = setTimeout(() => done(new Error(`no TLS connection to the upstream through the proxy within ${this.ms} ms: timed out`)), left)
          tls.unref()
          socket.once('secureConnect', onSecure)
          socket.once('error', done)
        })
      },
      (err: unknown) => {
        clearTimeout(timer)
        throw err
      },
    )
  }
}
