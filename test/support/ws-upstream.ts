import http from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Duplex } from 'node:stream'
import { type WebSocket, WebSocketServer } from 'ws'

/** A provider's WebSocket endpoint on 127.0.0.1 (Codex's Responses socket), with its plain HTTP beside it. */
export interface WsUpstream {
  /** `http://127.0.0.1:<port>`: what the server under test forwards to. */
  url: string
  http: http.Server
  wss: WebSocketServer
  close(): Promise<void>
}

export interface WsUpstreamOptions {
  /** Each accepted socket, with the upgrade request it came on. */
  onConnection: (ws: WebSocket, req: http.IncomingMessage) => void
  /** Plain HTTP requests (default: 404 with no body). */
  onRequest?: http.RequestListener
  /** Called before an upgrade is accepted; answering true means it handled (refused) it on `socket`. */
  refuse?: (req: http.IncomingMessage, socket: Duplex) => boolean
  /** Chooses the subprotocol among the client's offer (false: none); unset, the first offered. */
  handleProtocols?: (offered: Set<string>, req: http.IncomingMessage) => string | false
  /** Headers added to every upgrade's answer, as `name: value` lines. */
  headers?: () => string[]
}

export async function startWsUpstream(o: WsUpstreamOptions): Promise<WsUpstream> {
  const server = http.createServer(o.onRequest ?? ((_req, res) => res.writeHead(404).end()))
  const wss = new WebSocketServer({ noServer: true, ...(o.handleProtocols ? { handleProtocols: o.handleProtocols } : {}) })
  if (o.headers) wss.on('headers', (h) => h.push(...o.headers!()))
  server.on('upgrade', (req, socket, head) => {
    if (o.refuse?.(req, socket)) return
    wss.handleUpgrade(req, socket, head, (ws) => o.onConnection(ws, req))
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    http: server,
    wss,
    async close() {
      // Its sockets too (ws leaves them open, and a paused one never reads the relay's close).
      for (const c of wss.clients) c.terminate()
      wss.close()
      server.closeAllConnections()
      await new Promise<void>((r) => server.close(() => r()))
    },
  }
}
