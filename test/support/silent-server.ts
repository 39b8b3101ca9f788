import net, { type AddressInfo } from 'node:net'

/**
 * Stand-ins for a peer that takes a connection and then stalls (a middlebox that swallows the TLS
 * handshake, a proxy stuck on a host it cannot reach): the tests of Burnrate's own connect
 * timeouts (test/network/*-stall, *-silent*, *-connect-timeout) see through `held` which of
 * Burnrate's connections to it are still open.
 */

/**
 * Holds `socket` in `held` while it is open: what comes is read and never answered, and it is
 * closed when the client closes its side (`read: false` leaves the reading to the caller).
 */
export function holdSilently(socket: net.Socket, held: Set<net.Socket>, opts: { read?: boolean } = {}): void {
  held.add(socket)
  if (opts.read !== false) socket.resume()
  socket.on('end', () => socket.destroy())
  socket.on('close', () => held.delete(socket))
  socket.on('error', () => {})
}

/** Listens on a free port of 127.0.0.1 and gives that port. */
export async function listenLocal(server: net.Server): Promise<number> {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  return (server.address() as AddressInfo).port
}

/** Destroys the connections `held` still has, then closes `server`. */
export async function closeHolding(server: net.Server, held: Set<net.Socket>): Promise<void> {
  for (const s of held) s.destroy()
  await new Promise<void>((r) => server.close(() => r()))
}

export interface SilentServer {
  port: number
  /** The connections open to it now. */
  held: Set<net.Socket>
  close(): Promise<void>
}

/** A TCP server on 127.0.0.1 that takes every connection and never answers it. */
export async function startSilentServer(): Promise<SilentServer> {
  const held = new Set<net.Socket>()
  const server = net.createServer((s) => holdSilently(s, held))
  const port = await listenLocal(server)
  return { port, held, close: () => closeHolding(server, held) }
}
