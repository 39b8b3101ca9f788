/**
 * Where a login goes on to (`POST /login`'s `next`, the address the login page was shown at):
 * only ever a path of this server. The value is the browser's to send, so any page may post one:
 * a scheme (`https://evil.example`), a protocol-relative `//evil.example` or a spelling a browser
 * reads as one (`/\evil.example`, a tab or line break it strips: `/\t/evil.example`) goes to `/`,
 * as do the login page itself and an over-long value.
 */
const MAX_NEXT = 2048
const BASE = 'http://burnrate.invalid'

export function loginNext(value: string | null | undefined): string {
  if (!value || value.length > MAX_NEXT) return '/'
  // A path from the root, with nothing a URL parser drops or reads as a slash.
  // eslint-disable-next-line no-control-regex -- control characters are what it refuses
  if (!/^\/(?![/\\])[^\s\\\x00-\x1f\x7f]*$/.test(value)) return '/'
  let u: URL
  try {
    u = new URL(value, BASE)
  } catch {
    return '/'
  }
  if (u.origin !== BASE) return '/'
  const path = u.pathname
  if (path.startsWith('//') || path.toLowerCase() === '/login') return '/'
  return path + u.search
}

/**
 * The address a browser was on when it was shown the login page (a dashboard page without a
 * session), for its form's `next`: without a token or login code it came with.
 */
export function nextFromAddress(path: string, query: string): string {
  const params = new URLSearchParams(query)
  params.delete('token')
  params.delete('login')
  const rest = params.toString()
  return loginNext(path + (rest ? `?${rest}` : ''))
}
