import type { Agent, ClientRequestArgs, IncomingMessage } from 'node:http'
import { socksConnection } from '../../http/socks'
import type WebSocket from 'ws'
import type { WebSocketServer } from 'ws'
import type { WebSocketRelayOptions } from './relay-options'

/**
 * The ws library, loaded with the first upgrade (most servers never see one), and its server side
 * that completes the client's handshake as the upstream's went; with what the upstream's handshake
 * of one upgrade leaves for the client's (`Handshakes`), and the tunnels through a proxy.
 */

/** What the upstream's handshake of an upgrade left for the client's, by the client's upgrade request. */
export interface Handshakes {
  /** The upstream's 101 headers passed on to the client (./upgrade-answer.ts). */
  extraHeaders: WeakMap<IncomingMessage, string[]>
  /** The upstream's upgrade answer headers, for the socket's calls (the plan's windows). */
  upgradeAnswers: WeakMap<IncomingMessage, IncomingMessage['headers']>
  /** The subprotocol the upstream chose for an upgrade (none: unset), which the client is answered. */
  chosenProtocols: WeakMap<IncomingMessage, string>
  /** Upgrade requests whose proxy refused the tunnel, with the proxy's status (not the upstream's answer). */
  refusedByProxy: WeakMap<object, number>
}

export function newHandshakes(): Handshakes {
  return { extraHeaders: new WeakMap(), upgradeAnswers: new WeakMap(), chosenProtocols: new WeakMap(), refusedByProxy: new WeakMap() }
}

/** The ws library's client class, the server side this relay completes handshakes with, and the tunnel through a proxy (http/tunnel.ts) when one is set. */
export interface WsLib {
  WebSocket: typeof WebSocket
  server: WebSocketServer
  /**
   * How an upgrade to a ws:// (`secure` false) or wss:// upstream goes through `proxy`: the agent that
   * tunnels through an HTTP proxy (CONNECT), or the connection through a SOCKS5 one (../../http/socks.ts).
   */
  tunnel: ((proxy: string, secure: boolean) => Tunnel) | null
}

export type Tunnel = { agent: Agent } | { createConnection: ClientRequestArgs['createConnection'] }

/**
 * Loads the ws library (and the tunnel, with a proxy set) and makes the server side. The prices
 * are waited for too: the calls an upgrade carries are priced (../../pricing/library.ts).
 */
export function loadWsLib(opts: WebSocketRelayOptions, hs: Handshakes): Promise<WsLib> {
  return Promise.all([import('ws'), opts.proxy ? import('../../http/tunnel') : null, opts.pricesReady()]).then(([m, tunnelLib]) => {
    const server = new m.WebSocketServer({
      noServer: true,
      // The client is offered no compression: a compressed frame of a few bytes could inflate to
      // the body limit, outside the share of memory its header announced (./message-memory.ts).
      // The upstream's side stays compressed (./upstream-connect.ts).
      perMessageDeflate: false,
      maxPayload: opts.maxFrameBytes,
      // Both ends speak the subprotocol the upstream chose (one the client offered), or none if it chose none.
      handleProtocols: (offered, r) => {
        const chosen = hs.chosenProtocols.get(r)
        return chosen !== undefined && offered.has(chosen) ? chosen : false
      },
    })
    server.on('headers', (headers, r) => {
      const extra = hs.extraHeaders.get(r)
      if (extra) headers.push(...extra)
    })
    return { WebSocket: m.default, server, tunnel: tunnelLib && tunnels(tunnelLib.tunnelAgent, opts, hs) }
  })
}

/**
 * One tunnelling agent per HTTP proxy; it marks the upgrades whose CONNECT the proxy refused. Through
 * a SOCKS5 proxy, each connection is opened through it, the SOCKS5 negotiation and the TLS inside
 * the tunnel held to the connect timeout together (socks-proxy-agent, used before, gave them 30 s,
 * then the TLS the whole upgrade's time).
 */
function tunnels(tunnelAgent: typeof import('../../http/tunnel').tunnelAgent, opts: WebSocketRelayOptions, hs: Handshakes): (proxy: string, secure: boolean) => Tunnel {
  const agents = new Map<string, Agent>()
  return (proxy, secure) => {
    if (/^socks/i.test(proxy)) return { createConnection: socksConnection(proxy, secure, opts.timeouts.connect_timeout_ms) as ClientRequestArgs['createConnection'] }
    let agent = agents.get(proxy)
    if (!agent) {
      const a = tunnelAgent(proxy, { ca: opts.ca, connectTimeoutMs: opts.timeouts.connect_timeout_ms })
      a.on('proxyConnect', (connect: { statusCode: number }, r: object) => {
        if (connect.statusCode !== 200) hs.refusedByProxy.set(r, connect.statusCode)
      })
      agents.set(proxy, (agent = a))
    }
    return { agent }
  }
}
