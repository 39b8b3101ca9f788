import type { IncomingHttpHeaders, IncomingMessage } from 'node:http'
import zlib from 'node:zlib'
import { dropUnreadBody } from '../../http/unread-body'

export const DEFAULT_MAX_REQUEST = 100 * 1024 * 1024

export class BodyTooLarge extends Error {
  /** `decoded`: the body came within the limit compressed, and decompresses past it. */
  constructor(readonly decoded = false) {
    super()
  }
}
/** The bodies already held in memory leave no room for this one (BodyMemory). */
export class BodyMemoryFull extends Error {}

/**
 * The total of request bodies held in memory at once, across every call: each body metering reads
 * is read whole before it goes upstream (the others are streamed: ./request-stream.ts), so
 * without a total, twenty 99 MB calls take 2 GB. A body takes its
 * share as it arrives (all of it up front when Content-Length says) and gives it back when its
 * call ends. A client's WebSocket message takes its share of the same total (../ws/message-memory.ts).
 */
export class BodyMemory {
  private used = 0
  constructor(readonly limit: number) {}

  take(bytes: number): boolean {
    if (this.used + bytes > this.limit) return false
    this.used += bytes
    return true
  }

  give(bytes: number): void {
    this.used = Math.max(0, this.used - bytes)
  }

  get held(): number {
    return this.used
  }
}

/**
 * Reads a request body whole, up to `limit` bytes (BodyTooLarge past it); null when the request
 * has none. With `memory`, the body's bytes are taken from it (BodyMemoryFull when there is no
 * room; what was taken is given back); the caller gives a returned body's length back when done.
 * A body refused, by its Content-Length or as it comes, is read and dropped only so far, and its
 * connection closed past that (../../http/unread-body.ts): reading its rest to keep the connection
 * let a client stream gigabytes into the proxy.
 */
export function readBody(req: IncomingMessage, limit: number, memory?: BodyMemory): Promise<Buffer | null> {
  const len = req.headers['content-length']
  if (len === undefined && req.headers['transfer-encoding'] === undefined) return Promise.resolve(null)
  if (len !== undefined && Number(len) > limit) {
    dropUnreadBody(req)
    return Promise.reject(new BodyTooLarge())
  }
  let taken = 0
  if (memory && len !== undefined) {
    const n = Number(len) || 0
    if (!memory.take(n)) return Promise.reject(new BodyMemoryFull())
    taken = n
  }
  return new Promise((resolve, reject) => {
    // Nearly every body comes in one chunk: an array is made only for a second.
    let first: Buffer | null = null
    let chunks: Buffer[] | null = null
    let size = 0
    const fail = (err: Error) => {
      memory?.give(taken)
      taken = 0
      reject(err)
    }
    req.on('data', (c: Buffer) => {
      size += c.length
      if (memory && size > taken) {
        if (!memory.take(size - taken)) {
          req.removeAllListeners('data')
          dropUnreadBody(req)
          fail(new BodyMemoryFull())
          return
        }
        taken = size
      }
      if (size > limit) {
        req.removeAllListeners('data')
        dropUnreadBody(req)
        fail(new BodyTooLarge())
        return
      }
      if (first === null) first = c
      else if (chunks === null) chunks = [first, c]
      else chunks.push(c)
    })
    req.on('end', () => {
      if (memory && taken > size) memory.give(taken - size)
      resolve(chunks !== null ? Buffer.concat(chunks, size) : (first ?? Buffer.alloc(0)))
    })
    req.on('error', fail)
  })
}

/**
 * What the provider reads of a request: its body parsed (a decoded copy when it came compressed:
 * Codex logged in with ChatGPT sends its Responses calls as zstd) and its size as read, the
 * prompt's bytes the budgets bound its tokens by. The body itself goes upstream as it came. A
 * body Burnrate cannot decode (an encoding it does not know, corrupt data) is not read: the
 * provider answers it and the answer is metered. BodyTooLarge when it decodes past `limit`,
 * BodyMemoryFull when `memory` has no room for the decoded copy, which is given back once parsed.
 */
export function readRequest(
  body: Buffer | null,
  headers: IncomingHttpHeaders,
  limit: number,
  memory?: BodyMemory,
): { parsed: any; bytes: number } | Promise<{ parsed: any; bytes: number }> {
  if (!body) return { parsed: undefined, bytes: 0 }
  // Not compressed (every call but Codex's over HTTP): read now, with no promise on the call's way.
  const encoding = headers['content-encoding']
  if (!encoding || body.length === 0) return { parsed: parseJsonBody(body, headers['content-type']), bytes: body.length }
  return readDecoded(body, headers, limit, memory)
}

async function readDecoded(body: Buffer, headers: IncomingHttpHeaders, limit: number, memory?: BodyMemory): Promise<{ parsed: any; bytes: number }> {
  const decoded = await decodeBody(body, headers['content-encoding'], limit, memory)
  if (!decoded) return { parsed: undefined, bytes: body.length }
  try {
    return { parsed: parseJsonBody(decoded, headers['content-type']), bytes: decoded.length }
  } finally {
    if (decoded !== body) memory?.give(decoded.length)
  }
}

/** The Content-Encodings a request body is decoded from, as the answers' are (../../metering/body-tap.ts). */
function requestDecoder(encoding: string): zlib.Gunzip | zlib.Inflate | zlib.BrotliDecompress | zlib.ZstdDecompress | null {
  // Larger output chunks than zlib's 16 KiB: fewer trips to the thread pool for a large body.
  const chunkSize = 64 * 1024
  switch (encoding.trim().toLowerCase()) {
    case 'gzip':
    case 'x-gzip':
      return zlib.createGunzip({ chunkSize })
    case 'deflate':
      return zlib.createInflate({ chunkSize })
    case 'br':
      return zlib.createBrotliDecompress({ chunkSize })
    case 'zstd':
      // Its window is held to zstd's default limit (128 MB, what a 100 MB body compressed in one
      // frame needs); Node decodes the first frame of a body only (Codex sends one).
      return zlib.createZstdDecompress({ chunkSize })
    default:
      return null
  }
}

/**
 * A decoded copy of a compressed body, or the body itself when it names no encoding (or
 * `identity`); null when it cannot be decoded. Decoded off the event loop (zlib's streams run on
 * the thread pool), chunk by chunk, each taken from `memory`: a small body that decompresses to
 * gigabytes (a zip bomb) stops at `limit` (BodyTooLarge).
 */
export function decodeBody(body: Buffer, encoding: string | undefined, limit: number, memory?: BodyMemory): Promise<Buffer | null> {
  if (!encoding || /^\s*identity\s*$/i.test(encoding) || body.length === 0) return Promise.resolve(body)
  // A list (`gzip, zstd`: encoded twice) is not decoded: no client sends one.
  const decoder = requestDecoder(encoding)
  if (!decoder) return Promise.resolve(null)
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    let size = 0
    let over = false
    const stop = (err: Error | null): void => {
      if (over) return
      over = true
      decoder.destroy()
      memory?.give(size)
      if (err) reject(err)
      else resolve(null)
    }
    decoder.on('data', (c: Buffer) => {
      if (over) return
      if (size + c.length > limit) return stop(new BodyTooLarge(true))
      if (memory && !memory.take(c.length)) return stop(new BodyMemoryFull())
      size += c.length
      chunks.push(c)
    })
    decoder.on('error', () => stop(null))
    decoder.on('end', () => {
      if (over) return
      over = true
      resolve(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, size))
    })
    decoder.end(body)
  })
}

export function isJson(contentType: string | undefined): boolean {
  return !!contentType && /[/+]json\b/i.test(contentType)
}

/**
 * The body as JSON when it says it is, or a `multipart/form-data` body's short text fields as an
 * object (OpenAI's audio transcriptions and translations send `model` that way); undefined
 * otherwise (passed through as sent: the provider answers it).
 */
export function parseJsonBody(body: Buffer | null, contentType: string | undefined): any {
  if (!body || body.length === 0 || !contentType) return undefined
  if (!isJson(contentType)) return /^multipart\/form-data\b/i.test(contentType) ? formFields(body, contentType) : undefined
  try {
    return JSON.parse(body.toString('utf8'))
  } catch {
    return undefined
  }
}

/** Text fields longer than this are not kept (a prompt may be long; files are never kept). */
const MAX_FIELD = 16 * 1024
/** Fields kept at most. */
const MAX_FIELDS = 64
/**
 * Bytes looked at from each end of a form. Its text fields are small and stand before or after
 * the file (the Python SDK sends them first, the Node SDK after), so an upload of any size costs
 * the scan of at most twice this, never of the file.
 */
export const FORM_WINDOW = 64 * 1024

/** The delimiter that starts each part of a multipart form (`--` and the content type's boundary); null when it names none. */
export function formDelimiter(contentType: string): Buffer | null {
  const m = /;\s*boundary=(?:"([^"]{1,70})"|([^\s;]{1,70}))/i.exec(contentType)
  return m ? Buffer.from(`--${m[1] ?? m[2]}`, 'latin1') : null
}

/** Where `needle` occurs in `body` within [from, to), in order (a view is searched: no copy, no scan past `to`). */
export function occurrences(body: Buffer, needle: Buffer, from: number, to: number): number[] {
  const view = body.subarray(from, to)
  const out: number[] = []
  for (let i = view.indexOf(needle); i !== -1 && out.length <= MAX_FIELDS * 2; i = view.indexOf(needle, i + needle.length)) out.push(from + i)
  return out
}

/**
 * The text fields of a multipart form (RFC 7578): each part without a `filename`, whose value is
 * at most MAX_FIELD bytes, by name; `stream` as a boolean, as JSON would give it. Only the first
 * and last FORM_WINDOW bytes are searched for the boundary; a part that spans the middle is a
 * file. `joined`: `body` is those two windows of a larger form put end to end (a form streamed
 * upstream: ./request-stream.ts), so a part spanning where they meet is the file. Undefined when
 * the content type names no boundary or no field is found.
 */
export function formFields(body: Buffer, contentType: string, joined = false): Record<string, unknown> | undefined {
  const delimiter = formDelimiter(contentType)
  if (!delimiter) return undefined
  const whole = joined || body.length <= 2 * FORM_WINDOW
  const tail = joined ? FORM_WINDOW : whole ? Infinity : body.length - FORM_WINDOW
  const at = whole ? occurrences(body, delimiter, 0, body.length) : [...occurrences(body, delimiter, 0, FORM_WINDOW), ...occurrences(body, delimiter, tail, body.length)]
  const out: Record<string, unknown> = {}
  let fields = 0
  for (let i = 0; i + 1 < at.length && fields < MAX_FIELDS; i++) {
    const start = at[i]
    const next = at[i + 1]
    if (start < FORM_WINDOW && next >= tail) continue // spans the middle: a file
    if (body[start + delimiter.length] === 0x2d) break // the closing `--boundary--`
    const headersStart = start + delimiter.length + 2 // past the delimiter's CRLF
    const headersEnd = body.subarray(headersStart, next).indexOf('\r\n\r\n')
    if (headersEnd === -1) continue
    const valueStart = headersStart + headersEnd + 4
    const valueEnd = next - 2 // the CRLF before the next delimiter belongs to it
    if (valueEnd < valueStart || valueEnd - valueStart > MAX_FIELD) continue
    const headers = body.toString('latin1', headersStart, Math.min(headersStart + headersEnd, headersStart + 1024))
    const disposition = /content-disposition:[^\r\n]*/i.exec(headers)?.[0] ?? ''
    const name = /;\s*name="([^"]{1,100})"/i.exec(disposition)?.[1]
    if (!name || /;\s*filename\*?=/i.test(disposition)) continue
    const value = body.toString('utf8', valueStart, valueEnd)
    out[name] = name === 'stream' ? value.trim() === 'true' : value
    fields++
  }
  return fields > 0 ? out : undefined
}
