/**
 * Latency histograms for percentiles over long windows: log-spaced bins (each 2% wider than
 * the last), so a percentile read from the histogram is within 1% of the exact value. Stored
 * sparse as little-endian uint32 pairs (bin, count) so an hour with few calls costs few bytes.
 */

const RATIO = 1.02
const LOG_RATIO = Math.log(RATIO)
/** Bin 0 holds latencies under 1 ms; the last bin everything from ~27 h on. */
export const BINS = 1 + Math.ceil(Math.log(1e8) / LOG_RATIO)

export function binOf(latencyMs: number): number {
  if (!(latencyMs >= 1)) return 0
  return Math.min(BINS - 1, 1 + Math.floor(Math.log(latencyMs) / LOG_RATIO))
}

/** The value a bin stands for: the geometric middle of its bounds. */
export function binValue(bin: number): number {
  return bin === 0 ? 0.5 : Math.pow(RATIO, bin - 0.5)
}

export function decodeInto(blob: Buffer | Uint8Array | null, into: Float64Array): void {
  if (!blob || blob.byteLength === 0) return
  const view = new DataView(blob.buffer, blob.byteOffset, blob.byteLength)
  for (let o = 0; o + 8 <= blob.byteLength; o += 8) {
    into[view.getUint32(o, true)] += view.getUint32(o + 4, true)
  }
}

export function decodeMap(blob: Buffer | Uint8Array | null): Map<number, number> {
  const m = new Map<number, number>()
  if (!blob || blob.byteLength === 0) return m
  const view = new DataView(blob.buffer, blob.byteOffset, blob.byteLength)
  for (let o = 0; o + 8 <= blob.byteLength; o += 8) {
    const bin = view.getUint32(o, true)
    m.set(bin, (m.get(bin) ?? 0) + view.getUint32(o + 4, true))
  }
  return m
}

export function encode(m: Map<number, number>): Buffer {
  const bins = [...m.keys()].sort((a, b) => a - b)
  const buf = Buffer.allocUnsafe(bins.length * 8)
  let o = 0
  for (const b of bins) {
    buf.writeUInt32LE(b, o)
    buf.writeUInt32LE(m.get(b)!, o + 4)
    o += 8
  }
  return buf
}

/** A dense histogram (`BINS` counts) as the sparse form: one scan, no sorting. */
export function encodeDense(h: Float64Array): Buffer {
  let n = 0
  for (let b = 0; b < h.length; b++) if (h[b] > 0) n++
  const buf = Buffer.allocUnsafe(n * 8)
  let o = 0
  for (let b = 0; b < h.length; b++) {
    if (h[b] > 0) {
      buf.writeUInt32LE(b, o)
      buf.writeUInt32LE(h[b], o + 4)
      o += 8
    }
  }
  return buf
}

/** Nearest-rank percentile (`p` in 0..1) of a dense histogram holding `n` values. */
export function histogramPercentile(h: Float64Array, n: number, p: number): number {
  if (n <= 0) return 0
  const rank = Math.max(1, Math.ceil(p * n))
  let seen = 0
  for (let b = 0; b < h.length; b++) {
    seen += h[b]
    if (seen >= rank) return binValue(b)
  }
  return binValue(h.length - 1)
}

/** Nearest-rank percentile of values sorted ascending. */
export function exactPercentile(sorted: ArrayLike<number>, p: number): number {
  if (sorted.length === 0) return 0
  return sorted[Math.max(1, Math.ceil(p * sorted.length)) - 1]
}
