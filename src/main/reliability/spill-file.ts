import { closeSync, fsyncSync, openSync, readdirSync, readSync, renameSync, rmSync, writeSync } from 'node:fs'
import { open } from 'node:fs/promises'
import { join } from 'node:path'
import type { CallRecord } from '../ledger/record'
import type { SideWrite } from '../ledger/side-writes'

/**
 * The spill files: `ledger-spill-<ms>.jsonl` in the data folder, one JSON object per line: a call
 * (the same fields as the `calls` table: key hashes, never keys; and its `call_key`, so that a
 * file read again after its calls were stored stores nothing twice), or `{"side": …}`, a row the
 * ledger writes with its calls (../ledger/side-writes.ts: a budget hold kept or let go, a key's
 * rule patterns, a budget threshold announced), in the order they were kept. Files from releases before side rows hold calls only,
 * and from releases before call keys, calls without keys (../ledger/call-keys.ts `keysFromFile`).
 */
const PREFIX = 'ledger-spill-'

export function spillFiles(dataDir: string): string[] {
  try {
    return readdirSync(dataDir)
      .filter((f) => f.startsWith(PREFIX) && f.endsWith('.jsonl'))
      .sort()
      .map((f) => join(dataDir, f))
  } catch {
    return []
  }
}

/**
 * Removes the temporary files of spill-file rewrites a crash cut short (`<file>.tmp`, before its
 * rename): the spill file beside it still holds every call, so it holds nothing else. Only this
 * user's own are removed. Returns those removed.
 */
export function removeStrayTemps(dataDir: string, own: (file: string) => boolean): string[] {
  let names: string[]
  try {
    names = readdirSync(dataDir)
  } catch {
    return []
  }
  const out: string[] = []
  for (const f of names) {
    if (!f.startsWith(PREFIX) || !f.endsWith('.jsonl.tmp')) continue
    const file = join(dataDir, f)
    try {
      if (!own(file)) continue
      rmSync(file, { force: true })
      out.push(file)
    } catch {}
  }
  return out
}

/** The name of a spill file started at `now` (ms). */
export function spillFile(dataDir: string, now: number): string {
  return join(dataDir, `${PREFIX}${now}.jsonl`)
}

/**
 * A spill file could take only its first `kept` calls (the disk filled up): they are on disk and
 * put into the database at the next start; the others are lost (side rows are written first).
 */
export class SpillCut extends Error {
  constructor(
    readonly file: string,
    readonly kept: number,
    cause: unknown,
    /** Of the side rows written before the calls, how many are whole in the file. */
    readonly keptSide = 0,
  ) {
    super(`${(cause as NodeJS.ErrnoException)?.code ?? (cause as Error)?.message ?? cause}`, { cause })
  }
}

/**
 * Writes `rows` (and `side`, first) to a new spill file, synced to disk. Throws when it cannot; a
 * `SpillCut` when the file took only some of them (the file is kept: its whole lines are saved).
 * A name taken (another file made in the same millisecond: the PostgreSQL ledger's journal, opened
 * just before a stop kept its side rows) moves to the next millisecond, as the journal's does:
 * builds before this one gave up there, and the rows were lost.
 */
export function writeSpill(dataDir: string, rows: readonly CallRecord[], now = Date.now(), side: readonly SideWrite[] = []): string {
  for (let at = now; ; at++) {
    const file = spillFile(dataDir, at)
    try {
      writeRows(file, rows, side, 'wx')
      return file
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST' || at - now >= 1000) throw err
    }
  }
}

/**
 * Replaces a spill file's calls with `rows` (those still to be written), through a temporary
 * file renamed over it: a crash meanwhile leaves the old file or the new one, never half of one.
 * The temporary file is made new ('wx'), never opened through what is there: in a data folder
 * other users may write, a link one of them put under its name (the spill file's is there to
 * list) would have the calls written over the file it points to.
 */
export function rewriteSpill(file: string, rows: readonly CallRecord[], side: readonly SideWrite[] = []): void {
  const tmp = `${file}.tmp`
  try {
    rmSync(tmp, { force: true })
    writeRows(tmp, rows, side, 'wx')
    renameSync(tmp, file)
  } catch (err) {
    rmSync(tmp, { force: true })
    throw err
  }
}

/**
 * Writes every byte: a write to a nearly full disk may take only part of what it is given without
 * an error (the next one then fails with ENOSPC), and a file cut there would hold only its first
 * calls while the log said all were kept. Throws a SpillCut naming the whole calls written.
 */
function writeRows(file: string, rows: readonly CallRecord[], side: readonly SideWrite[], flags: string): void {
  const lines = side.map((w) => JSON.stringify({ side: w })).concat(rows.map((r) => JSON.stringify(r)))
  const buf = Buffer.from(lines.join('\n') + '\n', 'utf8')
  const fd = openSync(file, flags, 0o600)
  let off = 0
  try {
    while (off < buf.length) off += writeSync(fd, buf, off, buf.length - off)
    fsyncSync(fd)
  } catch (err) {
    try {
      fsyncSync(fd)
    } catch {}
    const n = wholeLines(buf, off)
    throw new SpillCut(file, Math.max(0, n - side.length), err, Math.min(n, side.length))
  } finally {
    closeSync(fd)
  }
}

/** How many lines end (with their newline) in the first `n` bytes of `buf`. */
export function wholeLines(buf: Buffer, n: number): number {
  let lines = 0
  for (let i = buf.indexOf(10); i !== -1 && i < n; i = buf.indexOf(10, i + 1)) lines++
  return lines
}

/** What a spill file holds: its calls, and the side rows kept with them. */
export interface Spilled {
  rows: CallRecord[]
  side: SideWrite[]
}

/** The calls in a spill file; a torn last line (a crash while writing) is skipped. */
export function readSpill(file: string): CallRecord[] {
  return readSpilled(file).rows
}

/**
 * The calls and side rows in a spill file (see readSpill), read a chunk at a time: a file past
 * the longest string V8 makes (~512 MB: a long outage on a busy team) cannot be read as one, and
 * builds before this one failed there at every start, its calls never stored.
 */
export function readSpilled(file: string): Spilled {
  const out: Spilled = { rows: [], side: [] }
  for (const e of spilledEntriesSync(file)) add(out, e)
  return out
}

/**
 * The side rows alone of a spill file (see readSpilled): its calls are read and let go, never
 * held. A PostgreSQL instance's own file (calls only, however large a long outage made it) is
 * looked through so at every start on PostgreSQL (../storage/spilled-side.ts); held whole, a file
 * of a few million calls took more memory than the process has, and the start failed every time.
 */
export function readSpilledSide(file: string): SideWrite[] {
  const side: SideWrite[] = []
  for (const e of spilledEntriesSync(file)) if ('side' in e) side.push(e.side)
  return side
}

/** The calls and side rows of a spill file in turn, read synchronously a chunk at a time (see spilledEntries). */
function* spilledEntriesSync(file: string): Generator<SpillEntry> {
  const fd = openSync(file, 'r')
  try {
    const lines = new SpillLines()
    const buf = Buffer.allocUnsafe(READ_CHUNK)
    for (let n = readSync(fd, buf, 0, READ_CHUNK, null); n > 0; n = readSync(fd, buf, 0, READ_CHUNK, null)) {
      for (const line of lines.push(buf.subarray(0, n))) {
        const e = entry(line)
        if (e) yield e
      }
    }
    const last = entry(lines.end())
    if (last) yield last
  } finally {
    closeSync(fd)
  }
}

/** One line of a spill file: a call, or a side row. */
export type SpillEntry = { row: CallRecord } | { side: SideWrite }

/**
 * The calls and side rows of a spill file in turn (see readSpilled), for a reader that works
 * through them as they come: a large file is never all in memory.
 */
export async function* spilledEntries(file: string): AsyncGenerator<SpillEntry> {
  const fh = await open(file, 'r')
  try {
    const lines = new SpillLines()
    const buf = Buffer.allocUnsafe(READ_CHUNK)
    for (;;) {
      const { bytesRead } = await fh.read(buf, 0, READ_CHUNK, null)
      if (bytesRead === 0) break
      for (const line of lines.push(buf.subarray(0, bytesRead))) {
        const e = entry(line)
        if (e) yield e
      }
    }
    const last = entry(lines.end())
    if (last) yield last
  } finally {
    await fh.close()
  }
}

/** The calls in a spill file's text (see readSpill). */
export function parseSpill(text: string): CallRecord[] {
  return parseSpilled(text).rows
}

/** The calls and side rows in a spill file's text; a torn or unknown line is skipped. */
export function parseSpilled(text: string): Spilled {
  const out: Spilled = { rows: [], side: [] }
  for (const line of text.split('\n')) add(out, entry(line))
  return out
}

function add(out: Spilled, e: SpillEntry | null): void {
  if (!e) return
  if ('row' in e) out.rows.push(e.row)
  else out.side.push(e.side)
}

/** A line's call or side row; null for an empty, torn or unknown one. */
function entry(line: string | null): SpillEntry | null {
  if (!line?.trim()) return null
  try {
    const r = JSON.parse(line)
    if (!r || typeof r !== 'object') return null
    if (typeof r.ts === 'number') return { row: r as CallRecord }
    if (isSideWrite(r.side)) return { side: r.side }
  } catch {}
  return null
}

/** Bytes read from a spill file at a time. */
const READ_CHUNK = 1 << 20

/**
 * Longest line kept (no call or side row comes near it): a longer one (garbage a crash left, such
 * as a run of NUL bytes) is skipped, as a torn one is, without being held whole.
 */
const MAX_LINE = 64 << 20

/** A spill file's bytes, as they are read, cut into its lines. */
class SpillLines {
  private parts: Buffer[] = []
  private size = 0
  private long = false

  /** The lines `chunk` ends (the rest waits for the next chunk; `chunk` may be reused after). */
  push(chunk: Buffer): string[] {
    const out: string[] = []
    let start = 0
    for (let nl = chunk.indexOf(10); nl !== -1; nl = chunk.indexOf(10, start)) {
      if (this.size === 0 && !this.long) out.push(chunk.toString('utf8', start, nl))
      else {
        this.take(chunk.subarray(start, nl))
        const line = this.line()
        if (line !== null) out.push(line)
      }
      start = nl + 1
    }
    this.take(chunk.subarray(start))
    return out
  }

  /** The last line, with no newline after it (torn, if it is not whole). */
  end(): string | null {
    return this.line()
  }

  private take(part: Buffer): void {
    if (part.length === 0 || this.long) return
    if (this.size + part.length > MAX_LINE) {
      this.long = true
      this.parts = []
      this.size = 0
      return
    }
    this.parts.push(Buffer.from(part))
    this.size += part.length
  }

  private line(): string | null {
    const line = this.long ? null : Buffer.concat(this.parts, this.size).toString('utf8')
    this.parts = []
    this.size = 0
    this.long = false
    return line
  }
}

function isSideWrite(w: unknown): w is SideWrite {
  if (!w || typeof w !== 'object') return false
  const o = w as Record<string, unknown>
  const obj = (v: unknown) => v !== null && typeof v === 'object'
  return obj(o.pattern) || obj(o.hold) || obj(o.unhold) || obj(o.announced) || obj(o.announcedEnded)
}
