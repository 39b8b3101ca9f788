import { createRequire } from 'node:module'
import type { Socket } from 'node:net'
import type { ConnectionOptions, TLSSocket } from 'node:tls'
import type * as Socks from 'socks'

const require = createRequire(import.meta.url)

/**
 * A connection to an upstream through a SOCKS5 proxy, the SOCKS5 negotiation and the TLS inside
 * the tunnel together held to `upstream.connect_timeout_ms`, as a direct connection is (undici's
 * connect timeout) and one through an HTTP proxy (its answer to CONNECT, then the TLS). undici's
 * own SOCKS5 agent waits 10 s to reach the proxy and 5 s for each of its answers, then for the
 * TLS handshake without limit, and socks-proxy-agent (which the upgrades and the OTLP export used)
 * 30 s and then without limit: a proxy that granted the tunnel and then stalled held the call until
 * first_byte_timeout_ms (600 s by default). The OTLP export's connections come from here too
 * (./tunnel.ts, `egressAgent`), within otel.timeout_ms.
 * The proxy resolves the host name (socks5h), as curl's socks5h:// and undici's client do.
 */

/** The error of a connection not open in time: undici's connect-timeout code, and words that say it timed out. */
export function connectTimeout(ms: number): Error {
  return Object.assign(new Error(`no connection within ${ms} ms through the SOCKS5 proxy: timed out`), { code: 'UND_ERR_CONNECT_TIMEOUT' })
}

export interface SocksTarget {
  host: string
  port: number
  /** For a TLS upstream: the TLS options (server name, CAs, ALPN) to speak inside the tunnel; null for plain TCP. */
  tls: ConnectionOptions | null
}

/** Opens a connection to `target` through the SOCKS5 proxy at `proxy` (socks5://user:password@host:port) within `ms`. */
export function socksConnect(proxy: URL, target: SocksTarget, ms: number, done: (err: Error | null, socket?: Socket) => void): void {
  let settled = false
  let tunnel: Socket | undefined
  let secure: TLSSocket | undefined
  // The SOCKS library loads with the first connection through such a proxy, never at start-up.
  const { SocksClient } = require('socks') as typeof Socks
  const client = new SocksClient({
    proxy: {
      host: proxy.hostname.replace(/^\[|\]$/g, ''),
      port: Number(proxy.port) || 1080,
      type: 5,
      ...(proxy.username ? { userId: decodeURIComponent(proxy.username), password: decodeURIComponent(proxy.password) } : {}),
    },
    command: 'connect',
    destination: { host: target.host.replace(/^\[|\]$/g, ''), port: target.port },
    // The library's own limit only after this one: the timeout is this one's.
    timeout: ms + 1000,
    set_tcp_nodelay: true,
  })
  const settle = (err: Error | null, socket?: Socket): void => {
    if (settled) return
    settled = true
    clearTimeout(timer)
    if (err) {
      secure?.destroy()
      tunnel?.destroy()
      // Still negotiating: the library's socket to the proxy.
      ;(client as unknown as { socket?: Socket }).socket?.destroy()
      client.removeAllListeners()
      client.on('error', () => {})
      done(err)
    } else done(null, socket)
  }
  const timer = setTimeout(() => settle(connectTimeout(ms)), ms)
  client.once('error', (err: Error) => settle(err))
  client.once('established', ({ socket }: { socket: Socket }) => {
    tunnel = socket
    if (settled) {
      socket.destroy()
      return
    }
    socket.setKeepAlive(true, 60_000)
    if (!target.tls) {
      settle(null, socket)
      return
    }
    // node:tls is loaded here, with a TLS upstream's first connection through the proxy.
    secure = process.getBuiltinModule('node:tls').connect({ ...target.tls, socket })
    secure.once('secureConnect', () => settle(null, secure))
    secure.once('error', (err) => settle(err))
  })
  client.connect()
}

/** The server name a TLS upstream at `host` is asked for: none for an address (RFC 6066). */
function serverName(host: string): string | undefined {
  const bare = host.replace(/^\[|\]$/g, '')
  return /^[\d.]+$/.test(bare) || bare.includes(':') ? undefined : bare
}

/** What undici hands a connector: the upstream to connect to. */
interface ConnectorOptions {
  hostname: string
  protocol: string
  port: string | number
  servername?: string | null
}

/**
 * An undici connector (a pool's `connect`) that opens every connection through the SOCKS5 proxy,
 * within `ms`, trusting `ca` besides the usual CAs for the TLS inside the tunnel. A connection not
 * open in time fails with undici's connect-timeout code: the call is a 504 that says so, as a
 * direct one is.
 */
export function socksConnector(
  proxy: string,
  ms: number,
  ca: readonly string[] | undefined,
): (o: ConnectorOptions, callback: (...args: [null, Socket] | [Error, null]) => void) => void {
  const url = new URL(proxy)
  return ({ hostname, protocol, port, servername }, callback) => {
    const secure = protocol === 'https:'
    const host = hostname.replace(/^\[|\]$/g, '')
    const tls: ConnectionOptions | null = secure
      ? { host, servername: servername || serverName(host), ALPNProtocols: ['http/1.1'], ...(ca ? { ca: [...ca] } : {}) }
      : null
    socksConnect(url, { host, port: Number(port) || (secure ? 443 : 80), tls }, ms, (err, socket) => (err ? callback(err, null) : callback(null, socket!)))
  }
}

/**
 * The same for the ws library (its `createConnection`): the connection to a ws:// or wss:// upstream
 * through the SOCKS5 proxy, within `ms`, with the TLS options ws gives (its CAs, the server name).
 * node:http takes the socket from the callback.
 */
export function socksConnection(proxy: string, secure: boolean, ms: number): (options: ConnectionOptions & { host?: string; port?: number | string }, cb: (err: Error | null, socket?: Socket) => void) => undefined {
  const url = new URL(proxy)
  return (options, cb) => {
    const host = (options.host ?? 'localhost').replace(/^\[|\]$/g, '')
    const tls: ConnectionOptions | null = secure ? { ...options, host, servername: options.servername || serverName(host), path: undefined, socket: undefined } as ConnectionOptions : null
    socksConnect(url, { host, port: Number(options.port) || (secure ? 443 : 80), tls }, ms, cb)
    return undefined
  }
}
