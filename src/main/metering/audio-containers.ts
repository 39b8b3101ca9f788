/**
 * The container formats' readers for ./audio-length.ts: Ogg, MP4 (M4A) and Matroska (WebM).
 * Each reads headers and the file's last MB only, visiting MAX_STEPS elements, boxes or pages at
 * most, so any size, and any content, costs about the same.
 */

/** `n` bytes at `at` as Latin-1 text; '' past the end. */
export function ascii(f: Buffer, at: number, n: number): string {
  return at + n <= f.length ? f.toString('latin1', at, at + n) : ''
}

/**
 * What one file's reading has done, counted where it is done: elements, boxes or pages visited,
 * and bytes searched for a page or cluster. A read gives up (not known) rather than pass
 * MAX_STEPS, and searches only the file's last TAIL bytes, so a file built to make the reader
 * walk (a chain of tiny elements, ids that look like clusters, no page in its tail) costs what an
 * ordinary one does. Kept by the caller so a test can see the bound hold.
 */
export interface Work {
  steps: number
  searched: number
}

/** How far back from the end the last Ogg page or Matroska cluster is looked for. */
export const TAIL = 1024 * 1024
/** Elements, boxes or pages visited at most in one file: a live WebM's last cluster holds a few thousand blocks at most (a block's time is 16 bits, 32.8 s of 20 ms Opus packets is 1,638). */
export const MAX_STEPS = 8192
/** Boxes or elements read at most on one level. */
const MAX_ITEMS = 64

/** One more element, box or page visited; false when the file has had all it may. */
function step(w: Work): boolean {
  if (w.steps >= MAX_STEPS) return false
  w.steps++
  return true
}

/**
 * Where `needle` last starts in `tail` (the file's last bytes, from `from`) before the file offset
 * `before`, as a file offset; -1 when nowhere. The search never leaves `tail`.
 */
function lastBefore(tail: Buffer, from: number, needle: Buffer, before: number, w: Work): number {
  if (before <= from || !step(w)) return -1
  const at = tail.lastIndexOf(needle, before - from - 1) // never negative here (a negative offset would count from the end)
  w.searched += at >= 0 ? before - from - at : before - from
  return at >= 0 ? from + at : -1
}

const OGGS = Buffer.from('OggS', 'latin1')
const CLUSTER_ID = Buffer.from([0x1f, 0x43, 0xb6, 0x75])

/**
 * Ogg: the granule position of the stream's last page is its end, in samples (48 kHz for Opus,
 * less the pre-skip), at the rate its first packet gives (Opus, Vorbis, FLAC).
 */
export function oggSeconds(f: Buffer, w: Work): number | null {
  const serial = f.readUInt32LE(14)
  const packet = 27 + f[26]
  for (let i = 27; i < packet; i++) if (f[i] === 255) return null // a first packet longer than a page: not a codec header
  let rate = 0
  let skip = 0
  if (ascii(f, packet, 8) === 'OpusHead') {
    rate = 48_000
    skip = f.readUInt16LE(packet + 10)
  } else if (ascii(f, packet, 7) === '\x01vorbis') {
    rate = f.readUInt32LE(packet + 12)
  } else if (ascii(f, packet, 5) === '\x7fFLAC' && ascii(f, packet + 9, 4) === 'fLaC') {
    const info = packet + 17
    rate = (f[info + 10] << 12) | (f[info + 11] << 4) | (f[info + 12] >> 4)
  }
  if (rate === 0) return null
  const from = Math.max(0, f.length - TAIL)
  const tail = f.subarray(from)
  for (let at = lastBefore(tail, from, OGGS, f.length - 26, w); at >= 0; at = lastBefore(tail, from, OGGS, at, w)) {
    if (f[at + 4] !== 0 || f.readUInt32LE(at + 14) !== serial) continue
    const granule = f.readBigInt64LE(at + 6)
    if (granule < 0n) continue // -1: no packet ends on this page
    return (Number(granule) - skip) / rate
  }
  return null
}

/** MP4 / M4A (ISO BMFF): the movie header's (`moov`/`mvhd`) duration in its timescale. */
export function mp4Seconds(f: Buffer, w: Work): number | null {
  const moov = box(f, 0, f.length, 'moov', w)
  if (!moov) return null
  const mvhd = box(f, moov.body, moov.end, 'mvhd', w)
  if (!mvhd) return null
  const v1 = f[mvhd.body] === 1
  const scale = f.readUInt32BE(mvhd.body + (v1 ? 20 : 12))
  const duration = v1 ? Number(f.readBigUInt64BE(mvhd.body + 24)) : f.readUInt32BE(mvhd.body + 16)
  return scale > 0 ? duration / scale : null
}

/** The first box of `type` among those in [from, to): where its content starts and where it ends. */
function box(f: Buffer, from: number, to: number, type: string, w: Work): { body: number; end: number } | null {
  for (let at = from, n = 0; at + 8 <= to && n < MAX_ITEMS && step(w); n++) {
    let size = f.readUInt32BE(at)
    let header = 8
    if (size === 1) {
      size = Number(f.readBigUInt64BE(at + 8))
      header = 16
    } else if (size === 0) size = to - at // to the end
    if (size < header) return null
    if (ascii(f, at + 4, 4) === type) return { body: at + header, end: Math.min(at + size, to) }
    at += size
  }
  return null
}

// Matroska element ids (with their length marker, as written).
const SEGMENT = 0x18538067
const INFO = 0x1549a966
const CLUSTER = 0x1f43b675
const TIMECODE_SCALE = 0x2ad7b1
const DURATION = 0x4489
const CLUSTER_TIMECODE = 0xe7
const SIMPLE_BLOCK = 0xa3
const BLOCK_GROUP = 0xa0
const BLOCK = 0xa1

interface Element {
  id: number
  /** Where its content starts. */
  body: number
  /** Where it ends (the end of the file for an element of unknown size). */
  end: number
}

/** A variable-length integer (EBML): its value (the id keeps its length marker), its length, and whether it is all ones (an unknown size). */
function vint(f: Buffer, at: number, keepMarker: boolean): { value: number; length: number; unknown: boolean } | null {
  const first = f[at]
  if (first === undefined || first === 0) return null
  const length = Math.clz32(first) - 23
  if (length > 8 || at + length > f.length) return null
  let value = keepMarker ? first : first & (0xff >> length)
  let ones = value === 0xff >> length
  for (let i = 1; i < length; i++) {
    value = value * 256 + f[at + i]
    ones &&= f[at + i] === 0xff
  }
  return { value, length, unknown: ones && !keepMarker }
}

/** The element at `at`, within `to`; null when it does not read, or the file has had all the steps it may. */
function element(f: Buffer, at: number, to: number, w: Work): Element | null {
  if (!step(w)) return null
  const id = vint(f, at, true)
  if (!id || id.length > 4) return null
  const size = vint(f, at + id.length, false)
  if (!size) return null
  const body = at + id.length + size.length
  const end = size.unknown ? to : body + size.value
  return body <= to ? { id: id.value, body, end: Math.min(end, to) } : null
}

function uint(f: Buffer, e: Element): number {
  let v = 0
  for (let i = e.body; i < e.end && i < e.body + 8; i++) v = v * 256 + f[i]
  return v
}

/**
 * Matroska / WebM: the segment's `Info` gives its `Duration` (in units of its `TimecodeScale`,
 * nanoseconds). A recording written as it was made (a browser's MediaRecorder) has none: its end
 * is then the last block's time in the file's last cluster, which is looked for in the file's
 * last MB.
 */
export function matroskaSeconds(f: Buffer, w: Work): number | null {
  const ebml = element(f, 0, f.length, w)
  const segment = ebml && element(f, ebml.end, f.length, w)
  if (!segment || segment.id !== SEGMENT) return null
  let scale = 1_000_000
  for (let at = segment.body, n = 0; at < segment.end && n < MAX_ITEMS; n++) {
    const e = element(f, at, segment.end, w)
    if (!e || e.id === CLUSTER) break
    if (e.id === INFO) {
      let duration = 0
      for (let p = e.body, m = 0; p < e.end && m < MAX_ITEMS; m++) {
        const c = element(f, p, e.end, w)
        if (!c) break
        if (c.id === TIMECODE_SCALE) scale = uint(f, c)
        else if (c.id === DURATION) duration = c.end - c.body === 4 ? f.readFloatBE(c.body) : c.end - c.body === 8 ? f.readDoubleBE(c.body) : 0
        p = c.end
      }
      if (duration > 0) return (duration * scale) / 1e9
      break
    }
    at = e.end
  }
  const end = lastBlockTime(f, segment.end, w)
  return end === null ? null : (end * scale) / 1e9
}

/**
 * The latest block time (cluster timecode plus the block's own) in the last cluster, within the
 * file's last TAIL bytes, that reads whole; null when none does, or when finding it would take
 * more than the file's MAX_STEPS.
 */
function lastBlockTime(f: Buffer, to: number, w: Work): number | null {
  const from = Math.max(0, f.length - TAIL)
  if (to <= from) return null
  const tail = f.subarray(from, to)
  // The id's bytes may occur inside audio data: a false one does not read as a cluster, and the one before it is tried.
  for (let at = lastBefore(tail, from, CLUSTER_ID, to - 3, w), tries = 0; at >= 0 && tries < 8; at = lastBefore(tail, from, CLUSTER_ID, at, w), tries++) {
    const end = clusterEnd(f, at, to, w)
    if (end !== null) return end
  }
  return null
}

function clusterEnd(f: Buffer, at: number, to: number, w: Work): number | null {
  const cluster = element(f, at, to, w)
  if (!cluster || cluster.id !== CLUSTER) return null
  let timecode: number | null = null
  let last = -Infinity
  for (let p = cluster.body; p < cluster.end; ) {
    const e = element(f, p, cluster.end, w)
    // An element that does not read, or runs past the file, is not a cluster's: this was no cluster.
    if (!e) return null
    if (e.id === CLUSTER) break // the next cluster of an unknown-size one
    if (e.id === CLUSTER_TIMECODE) timecode = uint(f, e)
    else if (e.id === SIMPLE_BLOCK || e.id === BLOCK_GROUP) {
      const block = e.id === BLOCK_GROUP ? element(f, e.body, e.end, w) : e
      if (!block || (e.id === BLOCK_GROUP && block.id !== BLOCK)) return null
      const track = vint(f, block.body, false)
      if (!track || block.body + track.length + 2 > f.length) return null
      last = Math.max(last, f.readInt16BE(block.body + track.length))
    }
    p = e.end
  }
  return timecode === null || last === -Infinity ? null : timecode + last
}
