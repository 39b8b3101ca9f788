import type http from 'node:http'
import type { AddressInfo } from 'node:net'
import { otherUsersListener } from '../desktop-logic/listener-owner'
import type { Logger } from '../log'
import { StartupError } from './startup-error'

/**
 * Listens on `host:port`, with a StartupError that says what to do when it cannot. `localhost`
 * is 127.0.0.1 for some clients and ::1 for others: both are listened on, the IPv6 half (a server
 * from `more`) on the port 127.0.0.1 got; a machine without IPv6 has only the other half.
 * `listening` is told the address as soon as the first half listens (the request guard checks the
 * port). Resolves with the IPv6 half's server, if any.
 */
export async function listenOn(
  server: http.Server,
  host: string,
  port: number,
  more: () => http.Server,
  log: Logger,
  listening: (port: number, url: string) => void,
): Promise<http.Server | null> {
  const bindsBoth = host.toLowerCase() === 'localhost'
  const bound = await new Promise<number>((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException) => {
      server.off('listening', onListening)
      if (err.code === 'EADDRINUSE') {
        void portTaken(`${host}:${port}`, bindsBoth ? '127.0.0.1' : host, port).then(reject)
      } else if (err.code === 'EACCES') {
        reject(new StartupError(`not allowed to listen on ${host}:${port}; choose a port above 1023 with --port <n>`))
      } else if (err.code === 'EADDRNOTAVAIL' || err.code === 'ENOTFOUND') {
        reject(new StartupError(`cannot listen on ${host}: no such address on this machine`))
      } else {
        reject(new StartupError(`cannot listen on ${host}:${port}: ${err.message}`))
      }
    }
    const onListening = () => {
      server.off('error', onError)
      const a = server.address() as AddressInfo
      const h = a.family === 'IPv6' ? `[${a.address}]` : a.address
      listening(a.port, `http://${h}:${a.port}`)
      resolve(a.port)
    }
    server.once('error', onError)
    server.once('listening', onListening)
    server.listen(port, bindsBoth ? '127.0.0.1' : host)
  })
  return bindsBoth ? listenIpv6Loopback(server, bound, more(), log) : null
}

/** The ::1 half of `localhost`, on the port 127.0.0.1 got (null: this machine has no IPv6 loopback). */
function listenIpv6Loopback(first: http.Server, port: number, s: http.Server, log: Logger): Promise<http.Server | null> {
  return new Promise((resolve, reject) => {
    s.once('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'EADDRNOTAVAIL' || err.code === 'EAFNOSUPPORT') {
        log.info(`localhost: this machine has no IPv6 loopback, listening on 127.0.0.1 only`)
        resolve(null)
        return
      }
      first.close()
      void portTaken(`[::1]:${port} (the IPv6 half of localhost)`, '::1', port).then(reject)
    })
    s.once('listening', () => resolve(s))
    s.listen(port, '::1')
  })
}

/**
 * The start-up error for an address another program listens on. When that program is another
 * user's (Linux: the kernel's socket tables name its owner), it says so: the agents pointed at
 * Burnrate there send it their calls, API keys included, and starting on another port (what the
 * plain message suggests) would leave them doing so without a word.
 */
async function portTaken(what: string, host: string, port: number): Promise<StartupError> {
  const other = await otherUsersListener(host, port).catch(() => null)
  if (other === null) return new StartupError(`${what} is already in use; stop what is using it or start with --port <n>`)
  return new StartupError(
    `${what} is taken by another user's program (uid ${other}): agents pointed at Burnrate there send it their calls, API keys included, while it listens; have it stopped (that user or an administrator), or start with --port <n> and connect your agents there (burnrate connect <agent>)`,
  )
}
