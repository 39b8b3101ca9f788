import http from 'node:http'
import type net from 'node:net'
import { closeHolding, holdSilently, listenLocal } from './silent-server'

export interface SilentConnectProxy {
  /** Its URL, for upstream.proxy. */
  url: string
  /** The proxy's server (e.g. for openConnections). */
  server: http.Server
  /** The CONNECT tunnels open now. */
  tunnels: Set<net.Socket>
  close(): Promise<void>
}

/**
 * An HTTP proxy on 127.0.0.1 (a corporate one) that takes each CONNECT and then stalls: it never
 * answers it, or with `grant` it answers 200 Connection Established and passes nothing on (the TLS
 * handshake with the upstream inside the tunnel never completes). What comes is read, never
 * answered; a tunnel is closed when Burnrate closes its side.
 */
export async function startSilentConnectProxy(opts: { grant?: boolean } = {}): Promise<SilentConnectProxy> {
  const tunnels = new Set<net.Socket>()
  const server = http.createServer()
  server.on('connect', (_req: http.IncomingMessage, socket: net.Socket) => {
    if (opts.grant) socket.write('HTTP/1.1 200 Connection Established\r\n\r\n')
    holdSilently(socket, tunnels)
  })
  const port = await listenLocal(server)
  return { url: `http://127.0.0.1:${port}`, server, tunnels, close: () => closeHolding(server, tunnels) }
}
