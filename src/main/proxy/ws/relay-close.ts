import type WebSocket from 'ws'
import { cutByStop } from '../call/stop-cut'
import type { Route } from '../routes'
import type { WebSocketRelayOptions } from './relay-options'
import type { SocketCalls } from './socket-calls'
import type { SilenceWatch } from './silence'

/**
 * How the two sockets of a relay end: either side's close passed on to the other (a lost
 * provider told to the agent as 1014, bad gateway), a provider gone dead under the client's pings,
 * and a frame the ws library refuses; each time the open calls are recorded as the side's that
 * ended (`calls.closed`), and the socket leaves `sockets` (closed at shutdown).
 */

/** Close codes that may be sent in a close frame (1005, 1006 and 1015 only describe what happened). */
function sendableCode(code: number): number | undefined {
  return (code >= 1000 && code <= 1003) || (code >= 1007 && code <= 1014) || (code >= 3000 && code <= 4999) ? code : undefined
}

export function relayCloses(
  client: WebSocket,
  up: WebSocket,
  calls: SocketCalls | null,
  silence: SilenceWatch | null,
  route: Route,
  opts: WebSocketRelayOptions,
  sockets: Set<WebSocket>,
  /** The client's connection (which the stop cuts). */
  raw: object,
): void {
  // Calls held for their bill after the client's close (./realtime-calls.ts) wait for the
  // upstream's answer to it at most upstream.connect_timeout_ms (ws would wait 30 s).
  let holdTimer: NodeJS.Timeout | null = null
  client.on('close', (code, reason) => {
    silence?.stop()
    sockets.delete(client)
    // Its connection cut by Burnrate's stop, not by the client: recorded as the stop's (503 burnrate_stopped).
    calls?.closed(cutByStop(raw) ? 'burnrate' : 'client')
    if (up.readyState === up.OPEN) {
      up.close(sendableCode(code), reason)
      if (calls?.release && !holdTimer) {
        holdTimer = setTimeout(() => calls.release?.(), opts.timeouts.connect_timeout_ms)
        holdTimer.unref()
      }
    } else up.terminate()
  })
  /**
   * The provider's side ended: its calls are recorded as the upstream's; the agent, still open,
   * is closed 1014 (bad gateway) unless `code` says how (a clean close passed on). False when
   * the agent's side was no longer open.
   */
  const upstreamEnded = (code = 1006, reason?: Buffer): boolean => {
    silence?.stop()
    calls?.closed('upstream')
    if (client.readyState !== client.OPEN) return false
    // The provider's connection dropped without a close frame (1006) or failed its TLS (1015):
    // 1014, so the agent can tell it from a clean close (1005, no status).
    if (code === 1006 || code === 1015) client.close(1014, 'the provider connection was lost')
    else client.close(sendableCode(code), reason)
    return true
  }
  up.on('close', (code, reason) => {
    if (holdTimer) clearTimeout(holdTimer)
    upstreamEnded(code, reason)
  })
  // The client's pings are answered here (by the ws library), so a provider connection gone dead
  // would still look alive to the agent: each is also sent on as a ping of the upstream, and one
  // unanswered (no pong, no frame) for upstream.connect_timeout_ms closes the client as for a lost
  // provider. Not while the relay holds the upstream back: an unread pong is not a missing one.
  let pingTimer: NodeJS.Timeout | null = null
  const alive = () => {
    if (pingTimer) clearTimeout(pingTimer)
    pingTimer = null
  }
  client.on('ping', () => {
    if (pingTimer || up.readyState !== up.OPEN) return
    up.ping()
    pingTimer = setTimeout(() => {
      pingTimer = null
      if (up.isPaused || up.readyState !== up.OPEN) return
      opts.warn?.(`${route.upstream.provider.name} (${route.upstream.host}) did not answer a ping on a WebSocket within upstream.connect_timeout_ms; the socket was closed`)
      upstreamEnded()
      up.terminate()
    }, opts.timeouts.connect_timeout_ms)
    pingTimer.unref()
  })
  up.on('pong', alive)
  up.on('message', alive)
  up.on('close', alive)

  // A frame the ws library refuses (not UTF-8, bad bits, too long) is the sending side's fault:
  // its calls are recorded as that side's before the other side's close could claim them, and
  // the client learns of a broken provider as of a lost one (1014), not by a close without status.
  client.on('error', () => {
    calls?.closed('client')
    up.terminate()
  })
  up.on('error', () => {
    if (!upstreamEnded()) client.terminate()
  })
}
