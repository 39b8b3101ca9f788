/**
 * A price-data address as shown (`GET /api/dashboard/prices`, which every user of the machine may
 * read without dashboard.token, and the log): without the user name and password, and with `?…`
 * for its query. A private mirror's address may carry its credentials (`https://user:pass@…`,
 * `?token=…`); they are sent to the mirror (see mirrorRequest), never shown.
 */
export function shownUrl(url: string): string {
  try {
    const u = new URL(url)
    return `${u.protocol}//${u.host}${u.pathname}${u.search ? '?…' : ''}`
  } catch {
    return '(an invalid URL)'
  }
}

/**
 * How to ask a price-data address: the URL without its user name and password, which go as an
 * `Authorization: Basic` header instead (undici sends nothing of a URL's credentials, and fetch
 * refuses such a URL: a private mirror behind basic auth answered every check with 401).
 * The query (`?token=…`) stays in the URL.
 */
export function mirrorRequest(url: string): { url: string; headers: Record<string, string> } {
  let u: URL
  try {
    u = new URL(url)
  } catch {
    return { url, headers: {} }
  }
  if (!u.username && !u.password) return { url, headers: {} }
  // The URL keeps them percent-encoded (a password with "@", ":" or "/" in it must be); the header carries them as written.
  const user = decodeURIComponent(u.username)
  const password = decodeURIComponent(u.password)
  u.username = ''
  u.password = ''
  return { url: u.href, headers: { authorization: `Basic ${Buffer.from(`${user}:${password}`, 'utf8').toString('base64')}` } }
}
