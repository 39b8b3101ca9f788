import { type Server, Socket, createServer } from 'node:net'

/**
 * A TCP proxy in front of PostgreSQL that can (a) drop the connection right after the server
 * answered a statement whose text contains `needle` (the statement committed, its answer lost),
 * or (b) be "down": every connection cut and new ones refused.
 */
export interface CutProxy {
  url: (dbUrl: string) => string
  /** The next statement containing `needle`: its answer (through ReadyForQuery) is dropped and the connection cut. */
  cutAfter(needle: string): Promise<void>
  setDown(down: boolean): void
  close(): Promise<void>
}

export async function cutProxy(pgPort: number): Promise<CutProxy> {
  const sockets = new Set<Socket>()
  let down = false
  let needle: string | null = null
  let cutDone: (() => void) | null = null
  const server: Server = createServer((client) => {
    if (down) return client.destroy()
    const upstream = new Socket()
    sockets.add(client)
    sockets.add(upstream)
    let armed = false
    const kill = () => {
      client.destroy()
      upstream.destroy()
    }
    client.on('data', (d: Buffer) => {
      if (needle && d.includes(needle)) {
        armed = true
        needle = null
      }
      upstream.write(d)
    })
    upstream.on('data', (d: Buffer) => {
      if (armed) {
        // Drop the answer once the server said ReadyForQuery (its transaction ended: committed).
        const z = d.length >= 6 && d[d.length - 6] === 0x5a && d.readInt32BE(d.length - 5) === 5
        if (z) {
          kill()
          cutDone?.()
          cutDone = null
        }
        return
      }
      client.write(d)
    })
    client.on('close', () => upstream.destroy())
    upstream.on('close', () => client.destroy())
    client.on('error', () => {})
    upstream.on('error', () => {})
    upstream.connect(pgPort, '127.0.0.1')
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  const port = (server.address() as { port: number }).port
  return {
    url: (u) => u.replace(/:(\d+)\//, `:${port}/`),
    cutAfter(n) {
      needle = n
      return new Promise<void>((r) => (cutDone = r))
    },
    setDown(d) {
      down = d
      if (d) for (const s of sockets) s.destroy()
    },
    close() {
      for (const s of sockets) s.destroy()
      return new Promise<void>((r) => server.close(() => r()))
    },
  }
}
