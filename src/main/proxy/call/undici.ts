import { createRequire } from 'node:module'
import type * as Undici from 'undici'

/**
 * The undici classes the proxy forwards with, loaded from their own modules: undici's
 * index also loads fetch, WebSocket, the cache and the mocks (about 110 files), which no proxied
 * call uses, and costs the headless server a noticeable part of its start-up. They are the very
 * classes the index exports (it re-exports these modules). Other code that needs undici's
 * `request` (price updates, webhooks) loads the whole library when it first sends.
 */
const require = createRequire(import.meta.url)

export const Pool: typeof Undici.Pool = require('undici/lib/dispatcher/pool.js')
export const Client: typeof Undici.Client = require('undici/lib/dispatcher/client.js')
/** Behind a proxy (upstream.proxy, HTTPS_PROXY): undici's whole index, loaded only then. */
export function proxyAgent(): typeof Undici.ProxyAgent {
  return (require('undici') as typeof Undici).ProxyAgent
}
