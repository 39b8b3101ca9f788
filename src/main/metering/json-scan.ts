/**
 * Scanning JSON text without parsing it, for the readers that look into a body or an event
 * before (or instead of) `JSON.parse`: a cut body, a cut array, an event's `usage`.
 */

/** The index before `limit` of the quote closing the string opened at `open` (one not escaped by an odd number of backslashes), or -1. */
export function closingQuote(text: string, open: number, limit = text.length): number {
  let j = open
  for (;;) {
    j = text.indexOf('"', j + 1)
    if (j === -1 || j >= limit) return -1
    let k = j - 1
    while (text.charCodeAt(k) === 92 /* \ */) k--
    if ((j - 1 - k) % 2 === 0) return j
  }
}

/** The index of the first character at or after `i` that is not JSON whitespace. */
export function skipSpace(text: string, i: number): number {
  while (i < text.length) {
    const c = text.charCodeAt(i)
    if (c !== 32 && c !== 10 && c !== 13 && c !== 9) break
    i++
  }
  return i
}
