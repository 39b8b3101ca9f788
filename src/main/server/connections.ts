import type http from 'node:http'
import type { Socket } from 'node:net'
import { REFUSED_BODY_BYTES } from '../http/unread-body'

/** How long a client may take to send a request's headers (a slowloris trickles them forever). */
export const HEADERS_TIMEOUT_MS = 30_000

interface Conn {
  /** A request on it is being answered (headers in, response not finished). */
  busy: number
}

/**
 * A connection handed over to an `upgrade` handler (a WebSocket): Node's HTTP parser lets go of
 * it (`socket.parser` becomes null), no 'request' event marks it busy, yet it is in use until it
 * closes, so it is never closed to make room.
 */
function upgraded(s: Socket): boolean {
  return (s as Socket & { parser?: unknown }).parser === null
}

const REFUSAL_BODY = JSON.stringify({
  error: { type: 'service_unavailable', message: 'Burnrate has too many open connections (server.max_connections); retry in a moment.' },
})
const REFUSAL =
  'HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json; charset=utf-8\r\nretry-after: 1\r\n' +
  `connection: close\r\ncontent-length: ${Buffer.byteLength(REFUSAL_BODY)}\r\n\r\n${REFUSAL_BODY}`

/**
 * Answers 503 on a connection no HTTP parser reads. What the client sent is read and dropped (up
 * to REFUSED_BODY_BYTES): closed with its bytes unread, the connection is reset, and a reset can
 * take the answer with it. It is closed a second after, whatever the client does.
 */
function refuse(s: Socket): void {
  s.on('error', () => {})
  let size = 0
  s.on('data', (chunk: Buffer) => {
    size += chunk.length
    if (size > REFUSED_BODY_BYTES) s.destroy()
  })
  s.end(REFUSAL)
  setTimeout(() => s.destroy(), 1000).unref()
}

/**
 * Keeps connections to at most `max`. A connection is busy from the moment its request's headers
 * are in until its response ends (a long upload or stream is never cut here). When a new one
 * arrives at the cap, the oldest connection that is not busy (idle keep-alive, or still
 * trickling its headers) is closed to make room, so thousands of slow partial requests cannot
 * crowd out health checks and real calls; only when every connection is busy is the new one
 * refused, with a 503 saying why.
 */
export function limitConnections(server: http.Server, max: number): OpenConnections {
  const conns = new Map<Socket, Conn>()
  const watch = (server: http.Server): void => {
    // Node's HTTP layer takes a connection in its own 'connection' listener, which puts its parser
    // on it: those listeners are moved behind this one and given only the connections let in. Left
    // before it, a connection refused here still had the request of its first packet parsed and
    // handled (a proxied call forwarded, and billed, for a client answered 503).
    const takers = server.listeners('connection') as ((s: Socket) => void)[]
    for (const f of takers) server.removeListener('connection', f)
    server.on('connection', (s: Socket) => {
      if (conns.size >= max) {
        let victim: Socket | null = null
        for (const [sock, c] of conns) {
          if (c.busy === 0 && !upgraded(sock)) {
            victim = sock
            break
          }
        }
        if (victim) {
          conns.delete(victim)
          victim.destroy()
        } else {
          refuse(s)
          return
        }
      }
      conns.set(s, { busy: 0 })
      s.on('close', () => conns.delete(s))
      for (const f of takers) f.call(server, s)
    })
    server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
      const c = conns.get(req.socket)
      if (!c) return
      c.busy++
      // Re-inserted at the end: the eviction order is by last use, oldest first.
      conns.delete(req.socket)
      conns.set(req.socket, c)
      let done = false
      const end = () => {
        if (done) return
        done = true
        c.busy--
      }
      // Plain listeners (each event comes once; `done` counts the first): no once() wrappers per request.
      res.on('finish', end)
      res.on('close', end)
    })
  }
  watch(server)
  return {
    watch,
    all: () => [...conns.keys()],
    get count() {
      return conns.size
    },
  }
}

export interface OpenConnections {
  /** Counts another server's connections under the same cap (the ::1 half of `localhost`). */
  watch(server: http.Server): void
  /** Every open connection (for shutdown). */
  all(): Socket[]
  readonly count: number
}
