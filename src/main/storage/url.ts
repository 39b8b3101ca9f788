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
