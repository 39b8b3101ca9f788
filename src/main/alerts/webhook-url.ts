/**
 * A webhook's address as logs, the delivery log and config errors show it: its origin, the path
 * and query left out (Slack's and others' paths are secrets).
 */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url)
    return `${u.protocol}//${u.host}${u.pathname.length > 1 || u.search ? '/…' : '/'}`
  } catch {
    return '(invalid URL)'
  }
}

/**
 * A webhook's address without the user name and password it may carry, its fragment kept: how
 * builds before webhookDestination named an alert kept for the next start (./outbox.ts reads
 * their rows).
 */
export function webhookEndpoint(url: string): string {
  try {
    const u = new URL(url)
    u.username = ''
    u.password = ''
    return u.href
  } catch {
    return url
  }
}

/**
 * Where a webhook's alerts go, as alert claims name it (./claims.ts): its scheme, host, port, path
 * and query as an HTTP client reaches them (`https://HOOKS.slack.com:443/x` is
 * `https://hooks.slack.com/x`), without the user name and password (they go as a header, and one
 * instance's config may hold the webhook's old password) or a fragment (never sent).
 */
export function webhookDestination(url: string): string {
  try {
    const u = new URL(url)
    u.username = ''
    u.password = ''
    u.hash = ''
    return u.href
  } catch {
    return url
  }
}
