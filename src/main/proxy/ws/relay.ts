import type { IncomingMessage } from 'node:http'
import type { Duplex } from 'node:stream'
import type WebSocket from 'ws'
import type { ProxyRule } from '../../http/network'
import type { Attributors } from '../call/context'
import type { HeadersObserver } from '../call/forward'
import type { CallLifecycle } from '../call/lifecycle'
import type { Route } from '../routes'
import { ResponsesSocketCalls } from './responses-calls'
import { answerError } from './upgrade-answer'
import { connectUpstream } from './upstream-connect'
import { loadWsLib, newHandshakes } from './ws-library'
import { SilenceWatch } from './silence'
import { loadOnce } from '../../server/load-once'

export interface WebSocketRelayOptions {
  life: CallLifecycle
  who: Attributors
  timeouts: { connect_timeout_ms: number; first_byte_timeout_ms: number; idle_timeout_ms: number }
  maxFrameBytes: number
  /** Resolves once calls can be priced (the server's Pricer's `ready`); the first upgrade waits for it. */
  pricesReady: () => Promise<void>
  /** Certificate authorities for wss:// upstreams (the usual ones plus `upstream.ca_file`'s); unset: Node's own. */
  ca?: string[]
  /** The proxy rule (upstream.proxy, HTTPS_PROXY...), the same as HTTP calls'; unset: no proxy. */
  proxy?: ProxyRule | null
  /** Sees the upstream's meter (upgrade headers, Codex's `codex.rate_limits` events). */
  observeHeaders?: HeadersObserver
  /** Logs why an upstream could not be reached, as for HTTP calls (each line at most once a minute). */
  warn?: (line: string) => void
}

/** Pause a side when this much is waiting to be sent to the other; resume below a quarter of it. */
const HIGH_WATER = 4 * 1024 * 1024

/** Close codes that may be sent in a close frame (1005, 1006 and 1015 only describe what happened). */
function sendableCode(code: number): number | undefined {
  return (code >= 1000 && code <= 1003) || (code >= 1007 && code <= 1014) || (code >= 3000 && code <= 4999) ? code : undefined
}

/**
 * WebSocket upgrades of proxied paths (Codex's `GET /v1/responses`), passed through: the
 * upstream is asked first (ws://, or wss:// for an https upstream) with the client's headers,
 * and only once it has accepted is the client's handshake completed, with the upstream's
 * headers; an upstream that refuses has its answer relayed as it came. Frames then pass both
 * ways unchanged (text stays text, binary stays binary); on a Responses socket each response is
 * metered and recorded as its own call (responses-calls.ts).
 */
export function createWebSocketRelay(opts: WebSocketRelayOptions) {
  const hs = newHandshakes()
  const sockets = new Set<WebSocket>()

  // The ws library is loaded with the first upgrade (./ws-library.ts), and tried again by the next
  // upgrade if it failed.
  const loadWs = loadOnce(() => loadWsLib(opts, hs))

  function upgrade(req: IncomingMessage, socket: Duplex, head: Buffer, route: Route): void {
    const upstream = route.upstream
    const provider = upstream.provider
    socket.on('error', () => {})
    if (!upstream.enabled) {
      answerError(socket, 404, 'not_found', `The ${provider.name} provider is turned off in the config (providers.${provider.name}.enabled).`)
      return
    }
    if (!upstream.baseUrl) {
      answerError(socket, 404, 'not_found', `The ${provider.name} provider has no upstream: ${provider.noUpstreamHint ?? `set providers.${provider.name}.base_url in the config`}.`)
      return
    }
    loadWs().then(
      (ws) => {
        if (!socket.destroyed) connectUpstream(ws, hs, opts, req, socket, head, route, relay)
      },
      () => answerError(socket, 500, 'internal', 'Burnrate could not load its WebSocket support.'),
    )
  }

  function relay(client: WebSocket, up: WebSocket, req: IncomingMessage, route: Route): void {
    sockets.add(client)
    const metered = /(^|\/)responses$/.test(route.path)
    const calls = metered ? new ResponsesSocketCalls(opts.life, route, req.headers, opts.who, opts.observeHeaders, hs.upgradeAnswers.get(req) ?? null) : null
    // An upstream silent too long in a response (as over HTTP): its calls are recorded 504 and the
    // client's socket closed with 1014 (bad gateway), so the agent retries rather than waits.
    const silence = calls
      ? new SilenceWatch(opts.timeouts, () => calls.openState(), () => up.isPaused, (started) => {
          calls.timedOut()
          opts.warn?.(`${route.upstream.provider.name} (${route.upstream.host}) ${started ? 'stalled mid-response' : 'did not answer'} on a WebSocket for longer than upstream.${started ? 'idle' : 'first_byte'}_timeout_ms; the socket was closed`)
          if (client.readyState === client.OPEN) client.close(1014, 'the provider stopped answering')
          up.terminate()
        })
      : null

    const pipe = (from: WebSocket, to: WebSocket) => (data: Buffer, isBinary: boolean) => {
      if (to.readyState !== to.OPEN) return
      to.send(data, { binary: isBinary }, () => {
        if (to.bufferedAmount < HIGH_WATER / 4 && from.isPaused) from.resume()
      })
      if (to.bufferedAmount > HIGH_WATER) from.pause()
    }
    const toUpstream = pipe(client, up)
    const toClient = pipe(up, client)
    // While a call's admission waits on the database (shared budget state), the client's next
    // frames wait behind it, so they reach the upstream in the order they were sent.
    let held: { data: Buffer; isBinary: boolean }[] | null = null
    const fromClient = (data: Buffer, isBinary: boolean): void => {
      if (held) {
        held.push({ data, isBinary })
        return
      }
      // A binary frame holding a JSON object is read as a text one (a provider may take it as
      // one): a response.create gated, whatever it sends.
      const refused = calls && (!isBinary || jsonObject(data)) ? calls.fromClient(data, isBinary) : null
      if (refused instanceof Promise) {
        held = []
        void refused.then((r) => {
          deliver(data, isBinary, r)
          const next = held ?? []
          held = null
          for (const f of next) fromClient(f.data, f.isBinary)
        })
        return
      }
      deliver(data, isBinary, refused)
    }
    const deliver = (data: Buffer, isBinary: boolean, refused: string | null | false) => {
      if (refused === false) return
      if (refused !== null) {
        if (client.readyState === client.OPEN) client.send(refused)
        return
      }
      toUpstream(data, isBinary)
      silence?.check()
    }
    client.on('message', (raw, isBinary) => fromClient(raw as Buffer, isBinary))
    up.on('message', (raw, isBinary) => {
      const data = raw as Buffer
      // A binary frame is metered as a text one when it holds a JSON object.
      if (calls && (!isBinary || jsonObject(data))) calls.fromUpstream(data)
      toClient(data, isBinary)
      silence?.check()
    })
    client.on('close', (code, reason) => {
      silence?.stop()
      sockets.delete(client)
      calls?.closed('client')
      if (up.readyState === up.OPEN) up.close(sendableCode(code), reason)
      else up.terminate()
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
    up.on('close', (code, reason) => void upstreamEnded(code, reason))
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

  return {
    upgrade,
    /** Closes the relayed sockets (shutdown): their open calls are recorded as cut. */
    close(): void {
      for (const c of sockets) c.terminate()
      sockets.clear()
    },
  }
}

/** Whether a frame's bytes begin as a JSON object does (`{` after any JSON whitespace). */
function jsonObject(data: Buffer): boolean {
  for (const b of data) {
    if (b === 0x20 || b === 0x09 || b === 0x0a || b === 0x0d) continue
    return b === 0x7b
  }
  return false
}
