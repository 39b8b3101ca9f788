import net from 'node:net'
import type { AddressInfo } from 'node:net'

/**
 * A TCP relay on 127.0.0.1 to `port` (a test PostgreSQL) that a test can cut: `cut()` closes
 * every connection through it and refuses new ones (as a database gone away does) until
 * `restore()`. `url(u)` is the database URL `u` through it.
 */
export async function cutProxy(port: number) {
  const sockets = new Set<net.Socket>()
  let down = false
  const server = net.createServer((client) => {
    if (down) return void client.destroy()
    const upstream = net.connect(port, '127.0.0.1')
    for (const s of [client, upstream]) {
      sockets.add(s)
      s.on('close', () => sockets.delete(s))
      s.on('error', () => {
        client.destroy()
        upstream.destroy()
      })
    }
    client.pipe(upstream)
    upstream.pipe(client)
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  const own = (server.address() as AddressInfo).port
  return {
    url: (u: string) => {
      const x = new URL(u)
      x.port = String(own)
      return x.href
    },
    cut: () => {
      down = true
      for (const s of sockets) s.destroy()
    },
    restore: () => {
      down = false
    },
    close: () => new Promise<void>((r) => {
      down = true
      for (const s of sockets) s.destroy()
      server.close(() => r())
    }),
  }
}
