import type { IncomingMessage } from 'node:http'
import type { Duplex } from 'node:stream'
import type WebSocket from 'ws'
import { MAX_ANSWER_HEADERS } from '../call/dispatchers'
import { REACHED, describeNetworkError } from '../call/network-errors'
import { upstreamRequestHeaders } from '../headers'
import { type Route, upstreamPath } from '../routes'
import type { WebSocketRelayOptions } from './relay-options'
import { answerError, passedOn, relayRefusal } from './upgrade-answer'
import { timedConnection } from './connect-timeout'
import type { Handshakes, WsLib } from './ws-library'

/**
 * The upstream's side of a WebSocket upgrade: the upstream is asked first (ws://, or wss:// for
 * an https upstream, through the proxy when one is set) with the client's headers and its offer
 * of subprotocols, and only once it has accepted is the client's handshake completed (`relay`
 * then has both sockets). An upstream that refuses has its answer relayed as it comes; one that
 * cannot be reached, or does not accept in time, is answered as an HTTP call's would be.
 */
export function connectUpstream(
  { WebSocket, server, tunnel }: WsLib,
  hs: Handshakes,
  opts: WebSocketRelayOptions,
  req: IncomingMessage,
  socket: Duplex,
  head: Buffer,
  route: Route,
  relay: (client: WebSocket, up: WebSocket, req: IncomingMessage, route: Route) => void,
): void {
  const upstream = route.upstream
  const provider = upstream.provider
  const target = upstream.origin.replace(/^http/i, 'ws') + upstreamPath(route)
  const proxy = tunnel && opts.proxy?.(upstream.origin)
  const secure = /^https/i.test(upstream.origin)
  const headers = upstreamRequestHeaders(req.headers, upstream.host)
  for (const name of Object.keys(headers)) if (name.startsWith('sec-websocket-')) delete headers[name]
  // The client's offer goes as it came, not as the ws library's `protocols`: that would fail an
  // upstream that accepts without choosing one (RFC 6455 allows it). Its choice is read at 'upgrade'.
  const offer = req.headers['sec-websocket-protocol']
  if (offer) headers['sec-websocket-protocol'] = offer
  let up: WebSocket
  try {
    up = new WebSocket(target, [], {
      headers: headers as Record<string, string>,
      perMessageDeflate: true,
      maxPayload: opts.maxFrameBytes,
      // The upgrade answer's headers up to what an HTTP call's answer may carry (Node's default is 16 KiB).
      maxHeaderSize: MAX_ANSWER_HEADERS,
      handshakeTimeout: opts.timeouts.connect_timeout_ms + opts.timeouts.first_byte_timeout_ms,
      ...(opts.ca ? { ca: opts.ca } : {}),
      // Directly, the connection is held to the connect timeout as an HTTP call's is (./connect-timeout.ts).
      ...(proxy ? tunnel(proxy, secure) : { createConnection: timedConnection(secure, opts.timeouts.connect_timeout_ms) }),
    })
  } catch {
    // The ws library refuses some URLs by throwing (a fragment, `#…`, in the request target): not
    // let out of the relay (it would end the process), nor its words (they may hold the URL, a key).
    answerError(socket, 400, 'invalid_request', 'Burnrate could not make a WebSocket address of this request target; it was not sent upstream.')
    return
  }
  let settled = false
  // Until the client's side is relayed, the upstream socket is this upgrade's alone: the client
  // gone (or its handshake refused by the ws library once the upstream accepted, a bad key or
  // version answered 400), it is closed, or it would stay open for good.
  let relayed = false
  socket.once('close', () => {
    if (!relayed) up.terminate()
  })
  up.on('unexpected-response', (r, res) => {
    settled = true
    const proxyStatus = hs.refusedByProxy.get(r)
    if (proxyStatus !== undefined) {
      res.resume()
      up.terminate()
      unreachable(new Error(`Proxy response (${proxyStatus})`))
      return
    }
    // The upstream refused the upgrade: its answer goes to the client as it comes (a body that
    // never ends is cut once quiet for the idle timeout).
    relayRefusal(socket, res, opts.timeouts.idle_timeout_ms, () => up.terminate())
  })
  up.on('error', (err) => {
    if (settled) return
    settled = true
    // ws's handshake timeout, or the proxy's CONNECT unanswered (../../http/tunnel.ts: the cause says so).
    if (/timed out/i.test(err.message) || /timed out/i.test(String((err.cause as Error | undefined)?.message ?? ''))) {
      const message = `${provider.name} (${upstream.host}) did not accept the WebSocket upgrade in time.`
      answerError(socket, 504, 'upstream_timeout', message)
      opts.warn?.(message)
    } else {
      unreachable(err)
    }
  })
  // In the same words as an HTTP call's (an untrusted certificate, a proxy that wants credentials...).
  const unreachable = (err: Error) => {
    const known = describeNetworkError(err, upstream.host, provider.name)
    const why = known?.words ?? (err as NodeJS.ErrnoException).code ?? err.message
    const message = known && REACHED.has(known.code) ? `${provider.name} (${upstream.host}) ${why}.` : `Could not reach ${provider.name} at ${upstream.host}: ${why}.`
    answerError(socket, 502, 'upstream_unreachable', message)
    // No call was made, so no ledger row: the log is where a failing upgrade (Codex reconnecting) shows.
    opts.warn?.(`${message} (WebSocket)`)
  }
  up.on('upgrade', (res) => {
    hs.extraHeaders.set(req, passedOn(res.headers))
    hs.upgradeAnswers.set(req, res.headers)
    const chosen = res.headers['sec-websocket-protocol']
    if (chosen !== undefined) {
      hs.chosenProtocols.set(req, chosen)
      // Taken out before the ws library checks it against the `protocols` it was given (none).
      delete res.headers['sec-websocket-protocol']
    }
  })
  up.on('open', () => {
    if (settled || socket.destroyed) {
      up.terminate()
      return
    }
    settled = true
    server.handleUpgrade(req, socket, head, (client) => {
      relayed = true
      relay(client, up, req, route)
    })
  })
}
