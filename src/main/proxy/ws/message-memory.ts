import type { Duplex } from 'node:stream'
import type WebSocket from 'ws'
import type { BodyMemory } from '../call/request-body'

/**
 * One client socket's share of the memory for request bodies (../call/request-body.ts
 * BodyMemory, server.max_buffered_body_mb), for its messages: the ws library holds a message
 * whole (every fragment of it) before the relay sees it, and the relay holds it until it is
 * written upstream, each up to the body limit. Read from the socket's bytes before the ws
 * library reads them: each data frame's payload is taken as its header announces it (as a body's
 * Content-Length is), so a frame that finds no room is refused before it is taken in; a message
 * gives its bytes back once it is sent upstream (or not sent), and the socket gives back the rest
 * when it closes. The client is offered no compression (./ws-library.ts), so a frame holds what
 * its header says: no few bytes inflate to the body limit.
 */
export class MessageMemory {
  /** Bytes this socket holds of the total. */
  private taken = 0
  /** No longer counting: a frame found no room, one is past the message limit (the ws library refuses it), or the socket closed. */
  private stopped = false
  /** The header of the frame being read, and how much of it came. */
  private readonly header = Buffer.alloc(14)
  private got = 0
  /** Payload bytes of the current frame still to come. */
  private payloadLeft = 0

  constructor(
    private readonly memory: BodyMemory,
    /** The largest message the ws library takes (its maxPayload): a frame past it is its to refuse. */
    private readonly maxMessage: number,
    /** A frame found no room: the socket is to be refused. Called once. */
    private readonly full: () => void,
  ) {}

  /** A chunk of the client's socket, before the ws library reads it. */
  read(chunk: Buffer): void {
    let i = 0
    while (i < chunk.length && !this.stopped) {
      if (this.payloadLeft > 0) {
        const n = Math.min(this.payloadLeft, chunk.length - i)
        this.payloadLeft -= n
        i += n
        continue
      }
      this.header[this.got++] = chunk[i++]
      if (this.got < 2 || this.got < headerLength(this.header)) continue
      this.got = 0
      this.payloadLeft = payloadLength(this.header)
      // Control frames (close, ping, pong) are at most 125 bytes, never held.
      if ((this.header[0] & 0x0f) >= 0x08 || this.payloadLeft === 0) continue
      if (this.payloadLeft > this.maxMessage) {
        this.stopped = true
        return
      }
      if (!this.memory.take(this.payloadLeft)) {
        this.stopped = true
        this.full()
        return
      }
      this.taken += this.payloadLeft
    }
  }

  /** A message of `bytes` is no longer held (sent upstream, refused or dropped). */
  give(bytes: number): void {
    const n = Math.min(bytes, this.taken)
    this.taken -= n
    this.memory.give(n)
  }

  /** Frames that come from now on are not held (the ws library reads them no more). */
  stop(): void {
    this.stopped = true
  }

  /** The socket closed: what it still holds is given back. */
  end(): void {
    this.stopped = true
    this.give(this.taken)
  }
}

/** The length of a frame's header (RFC 6455 5.2), from its first two bytes: the extended length and the mask key. */
function headerLength(h: Buffer): number {
  const len = h[1] & 0x7f
  return 2 + (len === 126 ? 2 : len === 127 ? 8 : 0) + (h[1] & 0x80 ? 4 : 0)
}

function payloadLength(h: Buffer): number {
  const len = h[1] & 0x7f
  if (len === 126) return h.readUInt16BE(2)
  if (len === 127) return h.readUInt32BE(2) * 2 ** 32 + h.readUInt32BE(6)
  return len
}

/**
 * Counts the client's messages on `raw` (its connection, which `client` reads) against `memory`.
 * A frame that finds no room closes the client 1013 (try again later: as an HTTP call's 503), its
 * message never taken in nor sent; the socket's other messages, already sent, are not undone.
 */
export function countMessages(client: WebSocket, raw: Duplex, memory: BodyMemory, maxMessage: number): MessageMemory {
  const onData = (c: Buffer): void => held.read(c)
  const held = new MessageMemory(memory, maxMessage, () => {
    // As the ws library does with a frame it refuses itself: it reads the socket no more (what it
    // took in is given back at the close), and what the client still sends is read and dropped,
    // so that the close frame reaches the client and its answer ends the connection.
    for (const l of raw.listeners('data')) if (l !== onData) raw.removeListener('data', l as (...args: unknown[]) => void)
    process.nextTick(() => raw.resume())
    if (client.readyState === client.OPEN) {
      client.close(1013, `Burnrate holds ${Math.round(memory.limit / 1048576)} MB of request bodies and messages already (server.max_buffered_body_mb); retry in a moment`)
    }
  })
  // Before the ws library's own listener: a frame is counted before it is taken in.
  raw.prependListener('data', onData)
  // A frame the ws library refuses (too long, not UTF-8...): it reads the socket no more, so what
  // comes after is not held, nor counted.
  client.once('error', () => held.stop())
  client.once('close', () => {
    raw.removeListener('data', onData)
    held.end()
  })
  return held
}
