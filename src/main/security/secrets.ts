import { createHash, timingSafeEqual } from 'node:crypto'

/**
 * Compares a presented secret with the expected one in constant time: both are hashed first,
 * so neither the content nor the length of the expected secret leaks through timing.
 */
export function safeEqual(presented: string, expected: string): boolean {
  const a = createHash('sha256').update(presented, 'utf8').digest()
  const b = createHash('sha256').update(expected, 'utf8').digest()
  return timingSafeEqual(a, b) && presented.length === expected.length
}

/** The bearer token of an `Authorization` header, or null when there is none or it is malformed. */
export function bearerToken(header: string | string[] | undefined): string | null {
  if (typeof header !== 'string') return null
  const m = /^Bearer +([^\s]+) *$/i.exec(header)
  return m ? m[1] : null
}

/**
 * The credential of an `Authorization: Bearer <token>` header as clients send it (any case,
 * any whitespace around), trimmed; null when there is none. What `/^\s*bearer\s+(.+?)\s*$/i`
 * matched, in time linear in the header: that lazy pattern retried the whitespace after each
 * character it took to the end of the value, n² steps for a token padded with spaces (a 16 KB
 * header held the event loop ~90 ms).
 */
export function bearerCredential(header: string): string | null {
  const s = header.trim()
  // (`trim` removes exactly the characters `\s` matches.)
  if (s.length < 8 || s.slice(0, 6).toLowerCase() !== 'bearer' || s.charAt(6).trim() !== '') return null
  return s.slice(7).trim()
}

/** The value of cookie `name` in a `Cookie` header, or null. */
export function cookieValue(header: string | string[] | undefined, name: string): string | null {
  return cookieValues(header, name)[0] ?? null
}

/**
 * Every value of cookie `name` in a `Cookie` header, in the order sent. A browser sends several
 * under one name when they have different paths, the longest path first: cookies are kept per
 * host, not per port, so a page on another port of 127.0.0.1 can set one under the dashboard's
 * name with a longer path, and reading only the first would lock the owner out.
 */
export function cookieValues(header: string | string[] | undefined, name: string): string[] {
  if (typeof header !== 'string') return []
  const out: string[] = []
  for (const part of header.split(';')) {
    const eq = part.indexOf('=')
    if (eq === -1) continue
    if (part.slice(0, eq).trim() === name) out.push(part.slice(eq + 1).trim())
  }
  return out
}
