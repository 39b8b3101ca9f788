import { crc32 } from 'node:zlib'

/** One message's `:event-type` (or `:exception-type`) and its payload as text. */
export type EventStreamHandler = (type: string, payload: string) => void

/**
 * An incremental reader of AWS's event stream encoding (`application/vnd.amazon.eventstream`,
 * Bedrock's `invoke-with-response-stream` and `converse-stream` answers), for the metering copy:
 * each message is `[total length u32][headers length u32][prelude CRC32][headers][payload][message CRC32]`,
 * big-endian. It is fed the answer's bytes in chunks split anywhere and calls `onMessage` once a
 * message is whole and both its checksums hold, with its `:event-type` (or `:exception-type`)
 * header and its payload. Only the string headers are read; a message whose prelude is corrupt
 * ends the reading (its framing cannot be trusted), one larger than MAX_MESSAGE is skipped.
 *
 * Hand-written rather than @smithy/eventstream-codec, which the tests check it against: that
 * library loads about 70 ms of the AWS SDK's core, and metering needs only the framing and two
 * headers. Node's own `zlib.crc32` checks the checksums.
 */
export class EventStreamReader {
  private pending: Buffer[] = []
  private pendingLength = 0
  /** Bytes the next message needs before it can be read (its prelude's 12, then its length). */
  private need = 12
  /** Bytes of an oversized message still to skip. */
  private skip = 0
  private broken = false
  /** Largest message read (a Bedrock chunk is a few KB; a larger one is skipped, not buffered). */
  static MAX_MESSAGE = 16 * 1024 * 1024

  constructor(private readonly onMessage: EventStreamHandler) {}

  /** True once a corrupt prelude stopped the reading. */
  get failed(): boolean {
    return this.broken
  }

  write(chunk: Buffer): void {
    if (this.broken) return
    if (this.skip > 0) {
      const n = Math.min(this.skip, chunk.length)
      this.skip -= n
      if (n === chunk.length) return
      chunk = chunk.subarray(n)
    }
    // A message arriving in many chunks is kept as pieces and joined once it is whole.
    this.pending.push(chunk)
    this.pendingLength += chunk.length
    if (this.pendingLength < this.need) return
    const buf = this.pending.length === 1 ? this.pending[0] : Buffer.concat(this.pending, this.pendingLength)
    this.pending = []
    this.pendingLength = 0
    this.need = 12
    let at = 0
    while (buf.length - at >= 12) {
      const total = buf.readUInt32BE(at)
      const headersLength = buf.readUInt32BE(at + 4)
      if (crc32(buf.subarray(at, at + 8)) !== buf.readUInt32BE(at + 8) || total < 16 + headersLength) {
        this.broken = true
        return
      }
      if (total > EventStreamReader.MAX_MESSAGE) {
        const here = Math.min(total, buf.length - at)
        this.skip = total - here
        at += here
        continue
      }
      if (buf.length - at < total) {
        this.need = total
        break
      }
      this.message(buf.subarray(at, at + total), headersLength)
      at += total
    }
    if (at < buf.length) {
      this.pending.push(buf.subarray(at))
      this.pendingLength = buf.length - at
    }
  }

  /** Nothing is kept past the last whole message: a message cut short is not a message. */
  end(): void {
    this.pending = []
    this.pendingLength = 0
    this.need = 12
    this.skip = 0
  }

  private message(m: Buffer, headersLength: number): void {
    const end = m.length - 4
    if (crc32(m.subarray(0, end)) !== m.readUInt32BE(end)) return
    let type = ''
    let messageType = ''
    let at = 12
    const headersEnd = 12 + headersLength
    while (at < headersEnd) {
      const nameLength = m[at]
      const name = m.toString('latin1', at + 1, at + 1 + nameLength)
      at += 1 + nameLength
      const kind = m[at++]
      const size = HEADER_SIZES[kind]
      if (size === undefined) return
      if (size === VARIABLE) {
        const n = m.readUInt16BE(at)
        if (kind === STRING && (name === ':event-type' || name === ':exception-type')) type = m.toString('utf8', at + 2, at + 2 + n)
        else if (kind === STRING && name === ':message-type') messageType = m.toString('utf8', at + 2, at + 2 + n)
        at += 2 + n
      } else at += size
    }
    if (at !== headersEnd) return
    this.onMessage(messageType === 'exception' || messageType === 'error' ? `exception:${type}` : type, m.toString('utf8', headersEnd, end))
  }
}

const VARIABLE = -1
const STRING = 7
/** Value sizes of the header types: true, false, byte, short, integer, long, bytes, string, timestamp, uuid. */
const HEADER_SIZES: Record<number, number> = { 0: 0, 1: 0, 2: 1, 3: 2, 4: 4, 5: 8, 6: VARIABLE, 7: VARIABLE, 8: 8, 9: 16 }
