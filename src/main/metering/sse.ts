import { StringDecoder } from 'node:string_decoder'

export type SseHandler = (event: string, data: string) => void

/**
 * An incremental parser of `text/event-stream` (WHATWG HTML, "event stream interpretation").
 * It is fed the response bytes as they pass through the proxy, in chunks that may split
 * lines, CRLF pairs or UTF-8 characters anywhere, and calls `onEvent` once per dispatched event.
 * Only the metering copy of the stream goes through here; the client gets the original bytes.
 */
export class SseParser {
  private decoder = new StringDecoder('utf8')
  /** The unfinished line's pieces, joined once when its end arrives (never re-scanned, never flattened per chunk). */
  private pending: string[] = []
  private pendingLength = 0
  private event = ''
  /** The event names this stream has used (a few: every provider's streams name under a dozen kinds). */
  private readonly eventNames: string[] = []
  /** The event's first `data` value; the rest, with it, in `moreData` (rare: one array per event would be allocated for nothing). */
  private data: string | undefined = undefined
  private moreData: string[] | null = null
  private lastWasCR = false
  private skipping = false
  /** Text has come: a byte order mark now is not the stream's first character. */
  private started = false
  /**
   * Longest line kept, as long as the longest JSON answer kept whole (../metering/body-tap.ts):
   * a Responses stream's `response.completed` repeats every output item, so one that generated
   * several images carries each image again (a 17 MB event was seen). A longer line is dropped,
   * not buffered.
   */
  static MAX_LINE = 64 * 1024 * 1024

  constructor(private readonly onEvent: SseHandler) {}

  write(chunk: Buffer): void {
    let text = this.decoder.write(chunk)
    if (!this.started && text.length > 0) {
      this.started = true
      // One leading byte order mark is ignored (the standard's event stream interpretation).
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1)
    }
    if (this.lastWasCR && text.charCodeAt(0) === 10) text = text.slice(1)
    this.lastWasCR = false
    if (text.length === 0) return
    // Only the new text is scanned for line ends, with indexOf (native); each of the two searches
    // moves forward only. A line arriving in many chunks is kept as pieces and joined once at its
    // end: concatenating it per chunk would make V8 flatten (copy) the whole line for every chunk's
    // search, quadratic in the line (a 20 MB line held the event loop for seconds).
    let start = 0
    let lf = text.indexOf('\n')
    let cr = text.indexOf('\r')
    while (lf !== -1 || cr !== -1) {
      let i = lf === -1 ? cr : cr === -1 ? lf : lf < cr ? lf : cr
      if (this.skipping) this.skipping = false
      else if (this.pendingLength + i - start > SseParser.MAX_LINE) {
        // an overlong line is dropped
      } else if (this.pendingLength === 0) this.line(text, start, i)
      else {
        const whole = this.pending.join('') + text.slice(start, i)
        this.line(whole, 0, whole.length)
      }
      if (this.pendingLength > 0) {
        this.pending = []
        this.pendingLength = 0
      }
      if (i === cr) {
        if (i + 1 < text.length) {
          if (text.charCodeAt(i + 1) === 10) i++
        } else {
          this.lastWasCR = true
        }
      }
      start = i + 1
      if (lf !== -1 && lf < start) lf = text.indexOf('\n', start)
      if (cr !== -1 && cr < start) cr = text.indexOf('\r', start)
    }
    if (start < text.length && !this.skipping) {
      this.pendingLength += text.length - start
      if (this.pendingLength > SseParser.MAX_LINE) {
        // Drop the overlong line, and the rest of it as it arrives.
        this.pending = []
        this.pendingLength = 0
        this.skipping = true
      } else {
        this.pending.push(start === 0 ? text : text.slice(start))
      }
    }
  }

  /** End of stream: a final event without its blank line is still dispatched. */
  end(): void {
    const rest = this.decoder.end()
    if (rest) this.pending.push(rest)
    const last = this.pending.join('')
    if (last.length > 0 && !this.skipping) this.line(last, 0, last.length)
    this.pending = []
    this.pendingLength = 0
    this.skipping = false
    this.dispatch()
  }

  /**
   * One line, `text` from `start` to `end` (its end of line excluded), read where it is: no copy
   * of the line, its field name or its value is made but the value of a `data` or `event` field,
   * the only two fields metering uses (`id` and `retry` only matter to a reconnecting client).
   */
  private line(text: string, start: number, end: number): void {
    if (start === end) {
      this.dispatch()
      return
    }
    const first = text.charCodeAt(start)
    if (first === 100 /* d */ && text.startsWith('data', start)) {
      const value = fieldValue(text, start + 4, end)
      if (value === undefined) return
      if (this.data === undefined) this.data = value
      else if (this.moreData === null) this.moreData = [this.data, value]
      else this.moreData.push(value)
    } else if (first === 101 /* e */ && text.startsWith('event', start)) {
      const at = valueStart(text, start + 5, end)
      if (at < 0) return
      // A stream names few kinds of event, over and over: one already seen is taken as it was
      // kept, not cut from the text again (a string per event).
      const seen = this.eventNames
      for (let i = 0; i < seen.length; i++) {
        const name = seen[i]
        if (name.length === end - at && text.startsWith(name, at)) {
          this.event = name
          return
        }
      }
      const value = text.slice(at, end)
      if (seen.length < MAX_EVENT_NAMES && value.length <= MAX_EVENT_NAME) seen.push(value)
      this.event = value
    }
  }

  private dispatch(): void {
    if (this.data !== undefined) {
      const data = this.moreData === null ? this.data : this.moreData.join('\n')
      const event = this.event || 'message'
      this.data = undefined
      this.moreData = null
      this.event = ''
      this.onEvent(event, data)
    } else {
      this.event = ''
    }
  }
}

/** Event names kept for reuse per stream, and the longest kept. */
const MAX_EVENT_NAMES = 16
const MAX_EVENT_NAME = 64

/** Where the value of a field whose name ends at `at` starts (`end` when the line ends there), or -1 when the name goes on (another field): as `fieldValue`. */
function valueStart(text: string, at: number, end: number): number {
  if (at === end) return end
  if (text.charCodeAt(at) !== 58 /* : */) return -1
  const v = at + 1
  return v < end && text.charCodeAt(v) === 32 ? v + 1 : v
}

/**
 * The value of a field whose name ends at `at`: empty when the line ends there, what follows the
 * colon (less one leading space) when a colon follows, else undefined (the name goes on: another field).
 */
function fieldValue(text: string, at: number, end: number): string | undefined {
  const v = valueStart(text, at, end)
  return v < 0 ? undefined : text.slice(v, end)
}
