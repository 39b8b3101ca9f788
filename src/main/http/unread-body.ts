import type { IncomingMessage } from 'node:http'

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
 * end before it answers): its connection is closed once more than `bytes` of it have come. Adds a
 * listener to the body's bytes: for a request read whole, not for one on the proxy's way.
 */
export function closePast(req: IncomingMessage, bytes: number): void {
  let size = 0
  req.on('data', (chunk: Buffer) => {
    size += chunk.length
    if (size > bytes) req.socket.destroy()
  })
}
