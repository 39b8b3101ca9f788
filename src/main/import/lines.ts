/**
 * Splits JSONL text into parsed objects. A line that is not JSON (malformed, or the last line
 * still being written) is counted, never thrown. `want` skips lines cheaply before parsing.
 */
export function* jsonLines(text: string, counter: { skipped: number }, want?: (line: string) => boolean): Generator<any> {
  let start = 0
  while (start < text.length) {
    let end = text.indexOf('\n', start)
    if (end === -1) end = text.length
    const line = text.slice(start, end).trim()
    start = end + 1
    if (line === '' || (want && !want(line))) continue
    let v: unknown
    try {
      v = JSON.parse(line)
    } catch {
      counter.skipped++
      continue
    }
    if (v !== null && typeof v === 'object' && !Array.isArray(v)) yield v
    else counter.skipped++
  }
}

/** An ISO time string as ms since the epoch, or NaN. */
export function timeOf(v: unknown): number {
  if (typeof v === 'number' && Number.isFinite(v)) return v
  return typeof v === 'string' ? Date.parse(v) : NaN
}

export function str(v: unknown): string {
  return typeof v === 'string' ? v : ''
}
