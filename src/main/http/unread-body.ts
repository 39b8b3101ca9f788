import type { IncomingMessage, ServerResponse } from 'node:http'

/** The most of a refused request's body read (and dropped) before its connection is closed. */
export const REFUSED_BODY_BYTES = 1024 * 1024

const DROPPING = new WeakSet<IncomingMessage>()

/**
 * For a request answered without its body being read (a refusal): the body is read and dropped
 * up to REFUSED_BODY_BYTES, then the connection is closed. Node's own way, for a connection kept
 * alive, read the rest whatever its length, so a refused client could stream gigabytes into the
 * server; and closing the connection at once, with the body's bytes unread, resets it, and a client
 * still sending (every client sends a small body whole before reading) lost the answer. A body that
 * ends within the bound leaves the connection usable. Safe to call more than once.
 */
export function dropUnreadBody(req: IncomingMessage): void {
  if (req.complete || DROPPING.has(req)) return
  DROPPING.add(req)
  let size = 0
  req.on('data', (chunk: Buffer) => {
    size += chunk.length
    if (size > REFUSED_BODY_BYTES) req.socket.destroy()
  })
  req.resume()
}

/**
 * For a body another reads (a parser that, once it has refused the body, reads the rest to its
 * end before it answers, however long): `refuse` is called once more than `limit` bytes of it have
 * come, to answer at once, and its connection is closed once more than `bound` (at least `limit`)
 * have come, only after the answer has gone out (closed at once, the answer the parser would give at the
 * body's end was never sent: the client saw its connection closed with no answer). Adds a listener
 * to the body's bytes: for a request read whole, not for one on the proxy's way.
 */
export function refusePast(req: IncomingMessage, res: ServerResponse, limit: number, bound: number, refuse: () => void): void {
  let size = 0
  let refused = false
  const count = (chunk: Buffer): void => {
    size += chunk.length
    if (size <= limit) return
    if (!refused) {
      refused = true
      refuse()
    }
    if (size > bound) {
      req.off('data', count)
      closeOnceAnswered(req, res)
    }
  }
  req.on('data', count)
}

/** How long a refused request's connection is kept, its body no longer read, for an answer still to go out. */
const ANSWER_GRACE_MS = 10_000

/**
 * Closes a refused request's connection once its answer has gone out, reading no more of its
 * body meanwhile: a connection closed before then lost the answer.
 */
export function closeOnceAnswered(req: IncomingMessage, res: ServerResponse): void {
  const socket = req.socket
  const close = (): void => {
    clearTimeout(timer)
    socket.destroy()
  }
  if (res.writableFinished || res.destroyed) {
    socket.destroy()
    return
  }
  req.pause()
  const timer = setTimeout(close, ANSWER_GRACE_MS)
  timer.unref()
  res.once('finish', close).once('close', close)
}
