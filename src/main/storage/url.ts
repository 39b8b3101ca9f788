/** The URL with its password replaced by `***` (for logs and `/api/health`). */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url)
    if (u.password) u.password = '***'
    for (const k of [...u.searchParams.keys()]) if (/pass/i.test(k)) u.searchParams.set(k, '***')
    return u.toString()
  } catch {
    return '(an invalid URL)'
  }
}

/** The URL's password (decoded), to keep it out of error texts; null without one. */
export function passwordOf(url: string): string | null {
  try {
    const p = decodeURIComponent(new URL(url).password)
    return p.length > 0 ? p : null
  } catch {
    return null
  }
}

/**
 * A server's address as shown and used as a base: the URL without the user, password, query and
 * fragment it may carry, nor a trailing slash (the team server's ingest base, the OTLP collector
 * in `/api/health`). Throws on an invalid URL (the config has checked it).
 */
export function bareUrl(url: string): string {
  const u = new URL(url)
  u.username = ''
  u.password = ''
  u.search = ''
  u.hash = ''
  return u.toString().replace(/\/+$/, '')
}
