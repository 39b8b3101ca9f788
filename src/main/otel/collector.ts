import type { Agent } from 'node:http'

/**
 * A signal's URL under the collector's base URL: its path goes after the endpoint's own path,
 * before its query (a collector behind a gateway may want `?tenant=…`): appended to the text, it
 * landed inside the query.
 */
export function signalUrl(endpoint: string, path: string): string {
  const u = new URL(endpoint)
  u.pathname = `${u.pathname.replace(/\/+$/, '')}${path}`
  return u.toString()
}

/** A keep-alive agent for `endpoint`'s protocol, as the exporters make their own. */
export function directAgent(endpoint: string): Promise<Agent> {
  return (new URL(endpoint).protocol === 'https:' ? import('node:https') : import('node:http')).then((m) => new m.Agent({ keepAlive: true }))
}

/** A failed export's reason, as `last_error` shows it. */
export function describeFailure(err: unknown): string {
  const e = err as { message?: string; code?: string | number } | undefined
  return String(e?.message ?? err ?? 'export failed').slice(0, 300)
}
