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
 * The address a webhook is POSTed to, as an HTTP client reaches it: two entries with the same one
 * (`https://HOOKS.slack.com:443/x` and `https://hooks.slack.com/x`) are one webhook.
 */
export function webhookAddress(url: string): string {
  try {
    return new URL(url).href
  } catch {
    return url
  }
}

/**
 * A webhook's address without the user name and password it may carry (they go as a header): the
 * same webhook after its password is changed in the config.
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
