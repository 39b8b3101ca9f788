import zlib from 'node:zlib'
import { closingQuote } from './json-scan'
import { PathPicker } from './path-picker'

/**
 * A decoded copy of a response body for metering. Compressed responses go to the client
 * as they came; only this tap inflates them. `write` takes the wire bytes; `end` resolves
 * once every decoded byte has reached `sink`.
 */
export class BodyTap {
  private readonly decoder: zlib.Gunzip | zlib.Inflate | zlib.BrotliDecompress | null
  private failed = false
  private ended: Promise<void> | null = null

  constructor(
    encoding: string | undefined,
    private readonly sink: (chunk: Buffer) => void,
  ) {
    this.decoder = createDecoder(encoding)
    if (this.decoder) {
      this.decoder.on('data', (b: Buffer) => this.feed(b))
      this.decoder.on('error', () => {
        this.failed = true
      })
    }
  }

  /** True when the body could not be decoded (corrupt or unsupported compression). */
  get broken(): boolean {
    return this.failed
  }

  write(chunk: Buffer): void {
    if (this.failed) return
    if (this.decoder) this.decoder.write(chunk)
    else this.feed(chunk)
  }

  /** A metering failure stops metering this body, never the response or the process. */
  private feed(chunk: Buffer): void {
    if (this.failed) return
    try {
      this.sink(chunk)
    } catch {
      this.failed = true
    }
  }

  /** True when decoded bytes may still be on their way to `sink` (a compressed body): `end()` must be awaited. */
  get decoding(): boolean {
    return this.decoder !== null && !this.failed
  }

  end(): Promise<void> {
    if (this.ended) return this.ended
    const d = this.decoder
    if (!d || this.failed) return (this.ended = Promise.resolve())
    this.ended = new Promise<void>((resolve) => {
      d.once('end', resolve)
      d.once('error', () => resolve())
      d.once('close', () => resolve())
      d.end()
    })
    return this.ended
  }
}

function createDecoder(encoding: string | undefined) {
  if (!encoding) return null
  const e = encoding.trim().toLowerCase()
  // A truncated body (client abort) still yields what was decoded so far.
  const opts = { finishFlush: zlib.constants.Z_SYNC_FLUSH }
  if (e === 'gzip' || e === 'x-gzip') return zlib.createGunzip(opts)
  if (e === 'deflate') return zlib.createInflate(opts)
  if (e === 'br') return zlib.createBrotliDecompress({ finishFlush: zlib.constants.BROTLI_OPERATION_FLUSH })
  if (e === 'zstd' && typeof (zlib as any).createZstdDecompress === 'function') return (zlib as any).createZstdDecompress()
  if (e === 'identity') return null
  return null
}

/** With `paths`, a body past this many bytes is also read by a PathPicker from then on (the bytes held so far fed at once: a few milliseconds). */
const PICK_FROM = 1024 * 1024

/**
 * Keeps a JSON response body for parsing when it ends, up to `limit` bytes. A larger body
 * (a huge embeddings response) is not held whole: its last `tailBytes` are kept, where the
 * providers put `usage`, and only that object is parsed; or, with `paths` (the meter's
 * `largeJsonPaths`: a Gemini batch's answer, whose thousands of inline results each carry their
 * usage), the values there, picked as the body passes (./path-picker.ts, started once it passes 1 MB).
 */
export class JsonCollector {
  private chunks: Buffer[] = []
  private size = 0
  private overflow = false
  private tail: Buffer[] = []
  private tailSize = 0
  private picker: PathPicker | null = null

  constructor(
    private readonly limit = 64 * 1024 * 1024,
    private readonly tailBytes = 256 * 1024,
    private readonly paths?: readonly string[],
  ) {}

  push = (chunk: Buffer): void => {
    if (this.picker) this.picker.write(chunk)
    else if (this.paths && this.size + chunk.length > Math.min(PICK_FROM, this.limit)) {
      this.picker = new PathPicker(this.paths)
      for (const c of this.chunks) this.picker.write(c)
      this.picker.write(chunk)
    }
    if (!this.overflow) {
      if (this.size + chunk.length <= this.limit) {
        this.chunks.push(chunk)
        this.size += chunk.length
        return
      }
      this.overflow = true
      this.tail = this.chunks
      this.tailSize = this.size
      this.chunks = []
    }
    this.tail.push(chunk)
    this.tailSize += chunk.length
    while (this.tail.length > 1 && this.tailSize - this.tail[0].length >= this.tailBytes) {
      this.tailSize -= this.tail.shift()!.length
    }
  }

  /** The parsed body; for an oversized body, `{usage, model}` found in its tail; undefined if unparseable. */
  parse(): unknown {
    if (!this.overflow) {
      if (this.size === 0) return undefined
      try {
        const whole = this.chunks.length === 1 ? this.chunks[0] : Buffer.concat(this.chunks, this.size)
        try {
          return JSON.parse(whole.toString('utf8'))
        } catch (e) {
          // A UTF-8 byte order mark, which RFC 8259 lets a reader ignore and JSON.parse does not:
          // looked for only once the body failed to parse, so other answers pay nothing for it.
          if (whole[0] !== 0xef || whole[1] !== 0xbb || whole[2] !== 0xbf) throw e
          return JSON.parse(whole.toString('utf8', 3))
        }
      } catch {
        return undefined
      }
    }
    if (this.picker) return this.picker.end()
    const text = Buffer.concat(this.tail).toString('utf8')
    const usage = objectAfterKey(text, 'usage') ?? objectAfterKey(text, 'usageMetadata')
    return usage ? { usage, usageMetadata: usage } : undefined
  }

  /** For a body that `parse` could not read (cut before its end): its text, when it was held whole; else undefined. */
  cutText(): string | undefined {
    if (this.overflow || this.size === 0) return undefined
    return Buffer.concat(this.chunks, this.size).toString('utf8')
  }

  /**
   * For a body that `parse` could not read: when it is a JSON array cut before its end (Gemini's
   * `streamGenerateContent` without `alt=sse`, reset or abandoned mid-answer), its complete
   * elements; else undefined.
   */
  cutArray(): unknown[] | undefined {
    if (this.overflow || this.size === 0) return undefined
    return completeElements(Buffer.concat(this.chunks, this.size).toString('utf8'))
  }
}

/**
 * The complete elements of a JSON array cut before its end (`[{…},{…},{"a` gives the first two),
 * or undefined when `text` is no array's beginning or holds no whole element. One pass over the
 * text (strings skipped with a native search), then one parse of the elements found.
 */
export function completeElements(text: string): unknown[] | undefined {
  let i = 0
  while (i < text.length && (text.charCodeAt(i) <= 32 || text.charCodeAt(i) === 0xfeff)) i++
  if (text.charCodeAt(i) !== 91 /* [ */) return undefined
  let depth = 0
  let lastEnd = -1
  for (; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c === 34 /* " */) {
      const j = closingQuote(text, i)
      if (j === -1) break
      i = j
    } else if (c === 91 || c === 123 /* [ { */) depth++
    else if (c === 93 || c === 125 /* ] } */) {
      depth--
      if (depth === 1) lastEnd = i
      else if (depth === 0) return undefined // the whole array ended: not cut (it did not parse for another reason)
    }
  }
  if (lastEnd === -1) return undefined
  try {
    const v: unknown = JSON.parse(text.slice(0, lastEnd + 1) + ']')
    return Array.isArray(v) ? v : undefined
  } catch {
    return undefined
  }
}

/** Parses the JSON object that follows the last `"key":` in `text`, or undefined. */
export function objectAfterKey(text: string, key: string): unknown {
  const at = text.lastIndexOf(`"${key}"`)
  if (at === -1) return undefined
  const open = text.indexOf('{', at)
  if (open === -1) return undefined
  let depth = 0
  let inString = false
  for (let i = open; i < text.length; i++) {
    const c = text[i]
    if (inString) {
      if (c === '\\') i++
      else if (c === '"') inString = false
    } else if (c === '"') inString = true
    else if (c === '{') depth++
    else if (c === '}' && --depth === 0) {
      try {
        return JSON.parse(text.slice(open, i + 1))
      } catch {
        return undefined
      }
    }
  }
  return undefined
}
