import type { IncomingMessage, ServerResponse } from 'node:http'
import { Readable } from 'node:stream'
import { closeOnceAnswered, REFUSED_BODY_BYTES } from '../../http/unread-body'
import type { Route } from '../routes'
import { FORM_WINDOW, formFields, isJson } from './request-body'

/**
 * Whether a request's body goes upstream as it comes instead of being read whole first: it has a
 * body, and metering reads nothing of it before the call is sent. A JSON body is read (a model
 * call's, and every other call's that names its model there) unless its provider says its body is
 * never read (`Provider.streamsJson`: Anthropic's Message Batch creation). A body of any other type
 * (a file upload: OpenAI's `/v1/files` and `/v1/uploads/{id}/parts`, Gemini's `/upload/…` files,
 * any provider's files) is streamed unless its call is billable: an audio transcription's form,
 * whose audio and model the call is metered by, is still read whole. A JSON call, nearly every one,
 * pays a test of its Content-Type here and nothing more.
 */
export function streamsBody(route: Route, req: IncomingMessage): boolean {
  const h = req.headers
  const len = h['content-length']
  if (len === undefined ? h['transfer-encoding'] === undefined : len === '0') return false
  const provider = route.upstream.provider
  const method = req.method ?? 'GET'
  const type = h['content-type']
  // What nearly every call sends is not put to the regular expression.
  if (type === 'application/json' || isJson(type)) return provider.streamsJson !== undefined && provider.streamsJson(method, route.path)
  return !provider.inspect({ method, path: route.path, query: route.query, headers: h, body: undefined }).billable
}

/** What a streamed body came to once it has all passed. */
export interface StreamedBody {
  /** Its bytes, as they came (compressed or not). */
  bytes: number
  /** A multipart form's text fields, read from its first and last FORM_WINDOW bytes (formFields); else undefined. */
  fields: Record<string, unknown> | undefined
}

/** What times the upstream's side of a streamed body's exchange (./dispatch-handler.ts). */
export interface BodyWatcher {
  /** The upstream is waited on: it has stopped taking the body, or has it all. */
  awaitFirstByte(): void
  /** It takes the body again. */
  bodyFlowing(): void
}

/** Bytes the tap lets wait before it pauses the client's upload (undici takes them as its connection can). */
const HIGH_WATER = 64 * 1024

/**
 * A request body on its way upstream, tapped, never held: each chunk the client sends is passed on
 * as it is (no copy), counted, and, for a multipart form, its first and last FORM_WINDOW bytes kept
 * to read its text fields from once it has passed (`done`). The client's upload is paused while
 * undici has no room (backpressure), so a body of any size holds a few chunks at most. Should the
 * exchange end before the body has (refused, failed, answered early), the rest is read and dropped
 * up to REFUSED_BODY_BYTES, so a client sending it whole gets its answer and the connection stays
 * usable, and the connection is closed past that once the answer has gone (read to its end, however
 * long, a client could stream gigabytes into the proxy); the client going away destroys it.
 */
export class RequestStream extends Readable {
  private bytes = 0
  private readonly form: string | null
  private head: Buffer[] = []
  private headBytes = 0
  private tail: Buffer[] = []
  private tailBytes = 0
  private dropping = false
  /** Bytes dropped since the exchange ended. */
  private dropped = 0
  private watcher: BodyWatcher | null = null

  constructor(
    private readonly req: IncomingMessage,
    private readonly done: (body: StreamedBody) => void,
    /** The call's answer: a body dropped past the bound has its connection closed once this has gone. */
    private readonly res?: ServerResponse,
  ) {
    super({ highWaterMark: HIGH_WATER })
    const type = req.headers['content-type']
    this.form = type && /^multipart\/form-data\b/i.test(type) ? type : null
    req.on('data', (c: Buffer) => this.chunk(c))
    req.on('end', () => this.ended())
    // The client went away, or its body broke: the upstream exchange fails with it.
    req.on('error', (err) => this.destroy(err))
    req.on('aborted', () => this.destroy(new Error('the client closed its connection while sending the request body')))
  }

  /** Tells `w` when the upstream stops taking the body (or has taken all of it), and when it takes it again. */
  watch(w: BodyWatcher): void {
    this.watcher = w
    this.once('end', () => w.awaitFirstByte())
  }

  override _read(): void {
    this.watcher?.bodyFlowing()
    if (!this.req.readableEnded) this.req.resume()
  }

  override _destroy(err: Error | null, cb: (err?: Error | null) => void): void {
    // undici is done with the body (the exchange ended) while it is still coming: dropped.
    if (!this.req.readableEnded && !this.req.destroyed) {
      this.dropping = true
      this.req.resume()
    }
    cb(err)
  }

  private chunk(c: Buffer): void {
    this.bytes += c.length
    if (this.form) this.keep(c)
    if (this.dropping) {
      this.dropped += c.length
      if (this.dropped > REFUSED_BODY_BYTES && this.dropped - c.length <= REFUSED_BODY_BYTES) {
        if (this.res) closeOnceAnswered(this.req, this.res)
        else this.req.socket.destroy()
      }
      return
    }
    if (!this.push(c)) {
      this.req.pause()
      this.watcher?.awaitFirstByte()
    }
  }

  private ended(): void {
    const fields = this.form ? this.fields(this.form) : undefined
    this.head = this.tail = []
    this.done({ bytes: this.bytes, fields })
    if (!this.dropping) this.push(null)
  }

  /** Keeps the form's first FORM_WINDOW bytes, and its last (chunks enough to cover them). */
  private keep(c: Buffer): void {
    if (this.headBytes < FORM_WINDOW) {
      const part = c.subarray(0, FORM_WINDOW - this.headBytes)
      this.head.push(part)
      this.headBytes += part.length
      if (part.length === c.length) return
      c = c.subarray(part.length)
    }
    this.tail.push(c)
    this.tailBytes += c.length
    while (this.tail.length > 1 && this.tailBytes - this.tail[0].length >= FORM_WINDOW) this.tailBytes -= this.tail.shift()!.length
  }

  private fields(type: string): Record<string, unknown> | undefined {
    const head = Buffer.concat(this.head, this.headBytes)
    const tail = Buffer.concat(this.tail, this.tailBytes)
    // Kept whole (no more than two windows' worth, or chunks too large to drop one), it is read as it
    // came; else its two windows are read end to end, as formFields reads a whole form's.
    if (this.headBytes + this.tailBytes === this.bytes) return formFields(Buffer.concat([head, tail]), type)
    return formFields(Buffer.concat([head, tail.subarray(tail.length - FORM_WINDOW)]), type, true)
  }
}
