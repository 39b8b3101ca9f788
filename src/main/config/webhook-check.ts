import { redactUrl, webhookDestination } from '../alerts/webhook-url'

/**
 * Why `alerts.webhooks` lists one webhook twice, or null. Each entry is POSTed every alert: one
 * destination listed twice (its format too, or not; with other credentials, or one with none) was
 * sent each alert twice. Entries are compared as alert claims name them (webhookDestination:
 * scheme, host, port, path and query, without credentials or fragment); the message shows neither
 * the path nor the credentials.
 */
export function repeatedWebhook(urls: readonly string[]): string | null {
  const seen = new Map<string, number>()
  for (const [i, url] of urls.entries()) {
    const destination = webhookDestination(url)
    const first = seen.get(destination)
    if (first !== undefined) {
      const where = `alerts.webhooks[${i}].url: the same webhook as alerts.webhooks[${first}] (${redactUrl(url)})`
      return credentialsOf(urls[first]) !== credentialsOf(url)
        ? `${where}, with other credentials; each alert would be POSTed to it twice; list it once, with the credentials it takes`
        : `${where}; each alert would be POSTed to it twice; list it once`
    }
    seen.set(destination, i)
  }
  return null
}

/** A webhook URL's user name and password as written (compared only, never shown). */
function credentialsOf(url: string): string {
  try {
    const u = new URL(url)
    return `${u.username}:${u.password}`
  } catch {
    return ''
  }
}
