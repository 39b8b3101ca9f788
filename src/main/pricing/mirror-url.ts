/**
 * A price-data address as shown (`GET /api/dashboard/prices`, which every user of the machine may
 * read without dashboard.token, and the log): without the user name and password, and with `?…`
 * for its query. A private mirror's address may carry its credentials (`https://user:pass@…`,
 * `?token=…`); they are sent to the mirror (see ../http/basic-auth.ts), never shown.
 */
export function shownUrl(url: string): string {
  try {
    const u = new URL(url)
    return `${u.protocol}//${u.host}${u.pathname}${u.search ? '?…' : ''}`
  } catch {
    return '(an invalid URL)'
  }
}
