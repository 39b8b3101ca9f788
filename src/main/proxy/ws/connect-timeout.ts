import net from 'node:net'
import type tls from 'node:tls'

/**
 * The ws library's own way of opening a direct connection to an upstream (net.connect, or
 * tls.connect with the host as the server name), held to `ms` until it is open (TLS included):
 * ws times only the whole upgrade (connect + first-byte timeouts, over ten minutes by default),
 * while an HTTP call's connection is given `upstream.connect_timeout_ms` (undici's connect
 * timeout). A connection not open in time is destroyed with an error that says it timed out.
 */
export function timedConnection(secure: boolean, ms: number): typeof net.createConnection {
  const connect = (options: net.NetConnectOpts & tls.ConnectionOptions): net.Socket => {
    let socket: net.Socket
    if (secure) {
      const o = { ...options, path: undefined } as tls.ConnectionOptions & { host?: string }
      if (!o.servername && o.servername !== '') o.servername = net.isIP(o.host ?? '') ? '' : o.host
      // node:tls is loaded here, with a wss:// upstream's first connection, never at start-up.
      socket = process.getBuiltinModule('node:tls').connect(o)
    } else {
      socket = net.connect({ ...options, path: (options as { socketPath?: string }).socketPath } as net.NetConnectOpts)
    }
    const timer = setTimeout(() => socket.destroy(new Error(`no connection within ${ms} ms: timed out`)), ms)
    timer.unref()
    const open = (): void => clearTimeout(timer)
    socket.once(secure ? 'secureConnect' : 'connect', open)
    socket.once('close', open)
    return socket
  }
  // ws calls it with its request's options only.
  return connect as typeof net.createConnection
}
