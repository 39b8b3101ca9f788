import { createReadStream } from 'node:fs'
import { pipeline } from 'node:stream'
import zlib from 'node:zlib'
import { fsError } from './walk'

const isRecord = (v: unknown): v is object => v !== null && typeof v === 'object' && !Array.isArray(v)

/**
 * A log line parsed: an object, else undefined and counted as skipped. A line that is not JSON
 * may be one cut short with the record written after it on the same line (writtenAfterCut): that
 * record is returned, the cut one counted.
 */
function parseLine(line: string, counter: { skipped: number }): object | undefined {
  let v: unknown
  try {
    v = JSON.parse(line)
  } catch {
    counter.skipped++
    return writtenAfterCut(line)
  }
  if (isRecord(v)) return v
  counter.skipped++
  return undefined
}

/** Starts of an object looked at in one bad line, at most: a bound on the work a long one costs. */
const MAX_CUT_STARTS = 256

/**
 * The record an agent wrote right after a line cut short, on the same line: a line's write cut
 * short (the disk full, the agent killed mid-write) loses its newline with its tail, and the
 * agent, or its resumed session, appends the next line after it. That line is the line's end,
 * from an object's start (`{"`, which JSON's strings never hold unescaped); no object started
 * within the cut part parses to the line's end (a complete one is followed by more, an open one
 * is never closed), so the first start whose rest parses is it. Undefined: none.
 */
function writtenAfterCut(line: string): object | undefined {
  let at = 0
  for (let tries = 0; tries < MAX_CUT_STARTS; tries++) {
    at = line.indexOf('{"', at + 1)
    if (at === -1) return undefined
    try {
      const v: unknown = JSON.parse(line.slice(at))
      if (isRecord(v)) return v
    } catch {
      // Not a whole record from here: the next start.
    }
  }
  return undefined
}

/**
 * A line of a log file longer than this is not read (counted as a bad line): V8's longest string
 * (0x1fffffe8 characters), which a line of as many UTF-8 bytes never exceeds; a longer one could
 * not be parsed at all, and is not kept.
 */
export const MAX_LINE_BYTES = 0x1fffffe8

/**
 * A JSONL file's lines parsed as objects (a line that is not one, malformed or still being
 * written, is counted, never thrown; a record written right after a line cut short is read), read a chunk at a time: memory is bounded by a line, never the file's
 * size (a long Claude Code session's transcript passes 512 MiB, more than a string can hold).
 * `markers`: only lines holding one of these are parsed (others are skipped uncounted, however
 * long, without being kept); none: every line. Lines end at `\n` (a `\r` before it, a BOM, and
 * the blanks around a line are trimmed). A `.zst` file is read decompressed; one that does not
 * decompress to its end has what it held before read and the rest counted as one bad line.
 */
export async function* fileJsonLines(
  path: string,
  counter: { skipped: number },
  markers: readonly string[] = [],
  maxLine = MAX_LINE_BYTES,
): AsyncGenerator<any> {
  const needles = markers.map((m) => Buffer.from(m))
  const overlap = Math.max(0, ...needles.map((n) => n.length - 1))
  let parts: Buffer[] = []
  let size = 0
  let tooLong = false
  let marked = needles.length === 0
  // The line's last bytes before this piece: a marker may straddle two chunks.
  let tail = Buffer.alloc(0)
  const add = (piece: Buffer) => {
    if (piece.length === 0) return
    if (!marked) {
      const edge = tail.length ? Buffer.concat([tail, piece.subarray(0, overlap)]) : null
      marked = needles.some((n) => piece.includes(n) || (edge !== null && edge.includes(n)))
      tail = piece.length >= overlap ? Buffer.from(piece.subarray(piece.length - overlap)) : Buffer.concat([tail, piece]).subarray(-overlap)
    }
    if (tooLong) return
    size += piece.length
    if (size > maxLine) {
      tooLong = true
      parts = []
    } else parts.push(piece)
  }
  const end = (): object | undefined => {
    let v: object | undefined
    if (marked && tooLong) counter.skipped++
    else if (marked && size > 0) {
      const line = (parts.length === 1 ? parts[0]! : Buffer.concat(parts, size)).toString('utf8').trim()
      if (line !== '') v = parseLine(line, counter)
    }
    parts = []
    size = 0
    tooLong = false
    marked = needles.length === 0
    tail = Buffer.alloc(0)
    return v
  }
  try {
    for await (const chunk of fileChunks(path)) {
      let start = 0
      for (;;) {
        const nl = chunk.indexOf(0x0a, start)
        if (nl === -1) break
        add(chunk.subarray(start, nl))
        const v = end()
        if (v !== undefined) yield v
        start = nl + 1
      }
      add(chunk.subarray(start))
    }
  } catch (err) {
    // The file system's errors are the file's (unreadable, gone): the importer's to tell. A
    // compressed file that does not decompress to its end (cut short, damaged): what it held
    // before is read, the rest is one bad line, and the other logs are read.
    if (fsError(err) || !isZstd(path)) throw err
    counter.skipped++
    return
  }
  const v = end()
  if (v !== undefined) yield v
}

/** Whether this Node can read zstd (22.15 and later): a `.zst` log is read only then. */
export const ZSTD = typeof (zlib as { createZstdDecompress?: unknown }).createZstdDecompress === 'function'

/**
 * A file's bytes a chunk at a time; a `.zst` file's decompressed (Codex compresses a rollout it no
 * longer writes to: `rollout-….jsonl.zst`), a chunk at a time too.
 */
const isZstd = (path: string) => ZSTD && path.endsWith('.zst')

function fileChunks(path: string): AsyncIterable<Buffer> {
  const file = createReadStream(path, { highWaterMark: 1024 * 1024 })
  if (!isZstd(path)) return file
  const unzstd = (zlib as unknown as { createZstdDecompress(o?: zlib.ZlibOptions): NodeJS.ReadWriteStream }).createZstdDecompress({ chunkSize: 1024 * 1024 })
  return pipeline(file, unzstd, () => {}) as unknown as AsyncIterable<Buffer>
}

/** An ISO time string as ms since the epoch, or NaN. */
export function timeOf(v: unknown): number {
  if (typeof v === 'number' && Number.isFinite(v)) return v
  return typeof v === 'string' ? Date.parse(v) : NaN
}

export function str(v: unknown): string {
  return typeof v === 'string' ? v : ''
}
