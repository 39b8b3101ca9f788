import type { Socket } from 'node:net'

/** What a write to a connection the upstream has closed (and reset) fails with. */
const CLOSED_UNDER_WRITE = new Set(['EPIPE', 'ECONNRESET'])

type WriteDone = (error?: Error | null) => void

/** How undici opens a connection (its own connector, or one through a proxy): the socket, or why not. */
export type Connector<O> = (options: O, callback: (...args: [null, Socket] | [Error, null]) => void) => void

/**
 * Connections to upstreams on which an answer that came while the request was still being sent is
 * read. An upstream may answer a request before it has taken its body (a 413 for an upload too
 * large, nginx's client_max_body_size; a 401 or 400 from a gateway that reads only the headers) and
 * close the connection, which its kernel then resets as more of the body comes. The answer is on
 * this machine before the reset, but undici failed the request on the body's next write (EPIPE or
 * ECONNRESET) and closed the socket with the answer unread: the client was told 502
 * upstream_unreachable, and its SDK sent the upload again, to be refused again. On a connection
 * made here, such a write error is held back until the socket closes: the write does not complete,
 * so undici writes no more of the body (the client's upload is paused), reads the answer that came
 * and ends the request with it (its own path for an answer complete before its request), closing
 * the socket. When no answer came, the reading ends with the reset or the close, and the request
 * fails with that as before; the call's first-byte timeout (upstream.first_byte_timeout_ms) bounds
 * the wait for either, as it bounds any upstream that takes no more of a body.
 */
export function readsAnswerFirst<O>(connect: Connector<O>): Connector<O> {
  return (options, callback) =>
    connect(options, (...args) => {
      const socket = args[1]
      if (socket) holdWriteErrors(socket)
      callback(...args)
    })
}

/** Holds back a write of `socket` that fails because the connection was closed under it, until the socket closes. */
function holdWriteErrors(socket: Socket): void {
  let held: (() => void) | null = null
  const hold =
    (done: WriteDone): WriteDone =>
    (error) => {
      const code = (error as NodeJS.ErrnoException | null | undefined)?.code
      if (error && code && CLOSED_UNDER_WRITE.has(code) && !held && !socket.destroyed) {
        held = () => done(error)
        return
      }
      done(error)
    }
  const write = socket._write
  const writev = socket._writev
  socket._write = function (chunk, encoding, done) {
    write.call(this, chunk, encoding, hold(done))
  }
  if (writev) {
    socket._writev = function (chunks, done) {
      writev.call(this, chunks, hold(done))
    }
  }
  // Closed (the answer read and the request ended, or the reading failed): the write completes
  // with its error, into a socket destroyed already.
  socket.once('close', () => {
    const release = held
    held = null
    release?.()
  })
}
