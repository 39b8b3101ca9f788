import http from 'node:http'
import { HEADERS_TIMEOUT_MS, type OpenConnections, limitConnections } from './connections'
import type { Dispatch } from './dispatch'

export interface HttpServers {
  /** The first listening address's server. */
  server: http.Server
  /** Every connection of every listening address, under one cap. */
  connections: OpenConnections
  /** Another listening address's server (the ::1 half of `localhost`), under the same cap. */
  more(): http.Server
}

/**
 * The HTTP servers of the listening addresses, each set up by `dispatch`, their connections under
 * one cap of `maxConnections` (both halves of `localhost`).
 */
export function createHttpServers(dispatch: Dispatch, maxConnections: number, headersTimeoutMs = HEADERS_TIMEOUT_MS): HttpServers {
  const { onRequest, setUp } = dispatch
  const serverOptions: http.ServerOptions = {
    keepAliveTimeout: 65_000,
    // Headers must arrive within this (checked every second); once they are in, no time limit:
    // long uploads and streams are never cut (requestTimeout 0), idle upstreams have their own.
    headersTimeout: headersTimeoutMs,
    requestTimeout: 0,
    connectionsCheckingInterval: 1000,
    requireHostHeader: false,
    // Only a WebSocket upgrade is taken up (the proxy's relay, ./dispatch.ts). Any other offer
    // (Java's HttpClient and curl --http2 send `Upgrade: h2c` with a POST) is a plain request:
    // taken as an upgrade, its body would never be read (Node 22.21 / 24.9 and later).
    shouldUpgradeCallback: (req) => req.method === 'GET' && /^websocket$/i.test(String(req.headers.upgrade ?? '')),
  }
  const server = setUp(http.createServer(serverOptions, onRequest))
  const connections = limitConnections(server, maxConnections)
  return {
    server,
    connections,
    more: () => {
      const s = setUp(http.createServer(serverOptions, onRequest))
      connections.watch(s)
      return s
    },
  }
}
