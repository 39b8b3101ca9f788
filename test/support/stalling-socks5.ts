import net from 'node:net'
import { closeHolding, holdSilently, listenLocal } from './silent-server'

/** Where the proxy stops answering: at the client's greeting, or after granting the tunnel. */
export type Socks5Stall = 'greeting' | 'tunnel'

export interface StallingSocks5 {
  /** Its URL, for upstream.proxy. */
  url: string
  /** Where it stalls the connections it takes from now on ('tunnel' at first). */
  stall: Socks5Stall
  /** The connections open to it now. */
  held: Set<net.Socket>
  /** Connections it took, and tunnels it granted, so far (set them back to 0 as a test likes). */
  accepted: number
  granted: number
  close(): Promise<void>
}

/**
 * A SOCKS5 proxy on 127.0.0.1 that takes the connection and then stalls: it never answers the
 * client's greeting, or it grants the tunnel (no authentication) and then swallows what comes (the
 * TLS handshake with the upstream never completes). A connection is closed when the client closes
 * its side.
 */
export async function startStallingSocks5(): Promise<StallingSocks5> {
  const held = new Set<net.Socket>()
  const server = net.createServer((client) => {
    proxy.accepted++
    holdSilently(client, held, { read: proxy.stall === 'greeting' })
    if (proxy.stall === 'greeting') return
    client.once('data', () => {
      client.write(Buffer.from([5, 0])) // no authentication
      client.once('data', () => {
        // The tunnel is granted; nothing after it is ever answered.
        client.write(Buffer.from([5, 0, 0, 1, 127, 0, 0, 1, 0, 0]))
        proxy.granted++
        client.resume()
      })
    })
  })
  const port = await listenLocal(server)
  const proxy: StallingSocks5 = { url: `socks5://127.0.0.1:${port}`, stall: 'tunnel', held, accepted: 0, granted: 0, close: () => closeHolding(server, held) }
  return proxy
}
