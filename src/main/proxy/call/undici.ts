import { createRequire } from 'node:module'
import type * as Undici from 'undici'

/**
 * The undici classes the proxy forwards with, loaded from their own modules: undici's
 * index also loads fetch, WebSocket, the cache and the mocks (about 110 files), which no proxied
 * call uses, and costs the headless server a noticeable part of its start-up. They are the very
 * classes the index exports (it re-exports these modules). Other code that needs undici's
 * `request` (price updates, webhooks) loads the whole library when it first sends.
 *
 * They load with the first upstream connection, or a moment after the server listens
 * (`preloadUndici`), whichever comes first: not before the server answers (20-35 ms of a slow
 * machine's start-up, with the TLS and HTTP/2 modules undici loads).
 */
const require = createRequire(import.meta.url)

let pool: typeof Undici.Pool | undefined
let client: typeof Undici.Client | undefined

export function poolClass(): typeof Undici.Pool {
  return (pool ??= require('undici/lib/dispatcher/pool.js') as typeof Undici.Pool)
}

export function clientClass(): typeof Undici.Client {
  return (client ??= require('undici/lib/dispatcher/client.js') as typeof Undici.Client)
}

let connector: typeof Undici.buildConnector | undefined

/** undici's own connector builder, which its pools use when given connect options. */
export function connectorBuilder(): typeof Undici.buildConnector {
  return (connector ??= require('undici/lib/core/connect.js') as typeof Undici.buildConnector)
}

let nameOf: ((raw: Buffer) => string) | undefined

/**
 * A raw header name as undici's own lower-cased name: a well-known one (content-type, date...)
 * as the same string every time, without decoding and lower-casing it; any other decoded as
 * latin1 and lower-cased. Called once an upstream has answered (undici is loaded by then).
 */
export function headerName(raw: Buffer): string {
  nameOf ??= (require('undici/lib/core/util.js') as { headerNameToString(b: Buffer): string }).headerNameToString
  return nameOf(raw)
}

/** Node's modules undici loads that start-up does not (see ../../server/startup-tiering.ts). */
export const UNDICI_BUILTINS = ['node:tls', 'node:http2'] as const

/** Loads the classes now (after start-up, off any call), so the first call does not. */
export function preloadUndici(): void {
  poolClass()
  clientClass()
}

let agent: typeof Undici.Agent | undefined

/** Behind a SOCKS5 proxy: the agent whose pools connect through it (../../http/socks.ts). */
export function agentClass(): typeof Undici.Agent {
  return (agent ??= require('undici/lib/dispatcher/agent.js') as typeof Undici.Agent)
}

/** Behind a proxy (upstream.proxy, HTTPS_PROXY): undici's whole index, loaded only then. */
export function proxyAgent(): typeof Undici.ProxyAgent {
  return (require('undici') as typeof Undici).ProxyAgent
}
