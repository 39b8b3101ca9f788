import type { IncomingMessage } from 'node:http'
import type { Duplex } from 'node:stream'
import type WebSocket from 'ws'
import type { Route } from '../routes'
import type { WebSocketRelayOptions } from './relay-options'
import { ResponsesSocketCalls } from './responses-calls'
import { RealtimeSocketCalls } from './realtime-calls'
import { GeminiLiveSocketCalls } from './gemini-live-calls'
import { isLivePath } from '../../providers/gemini-live-path'
import { withoutTrailingSlashes } from '../../providers/trailing-slashes'
import { admitUpgrade } from './realtime-upgrade'
import type { SocketCalls } from './socket-calls'
import { answerError } from './upgrade-answer'
import { relayCloses } from './relay-close'
import { relayFrames } from './relay-frames'
import { connectUpstream } from './upstream-connect'
import { loadWsLib, newHandshakes } from './ws-library'
import { SilenceWatch } from './silence'
import { countMessages } from './message-memory'
import { loadOnce } from '../../server/load-once'

export type { WebSocketRelayOptions }

/**
 * A socket's path as the meters read it: without trailing slashes, as the HTTP paths are read, so
 * `/v1/realtime/` is no way around the budgets and meters of `/v1/realtime`.
 */
const meteredPath = (route: Route) => withoutTrailingSlashes(route.path)

/**
 * The providers whose `…/realtime` socket speaks OpenAI's Realtime API events: OpenAI
 * (`/v1/realtime?model=…`), Azure OpenAI (`/openai/realtime?api-version=…&deployment=…`, and the v1
 * API's `/openai/v1/realtime?model=…`) and xAI's voice agents (`/v1/realtime?model=…`). Another
 * provider's path of that name is relayed unmetered: its events are not known here.
 */
const REALTIME_PROVIDERS = new Set(['openai', 'azure', 'xai'])

/** A Realtime API socket (above). */
function isRealtime(route: Route): boolean {
  return REALTIME_PROVIDERS.has(route.upstream.provider.name) && /(^|\/)realtime$/.test(meteredPath(route))
}

/** Gemini's Live API socket (`…GenerativeService.BidiGenerateContent`, and its ephemeral token's `…Constrained`). */
function isGeminiLive(route: Route): boolean {
  return route.upstream.provider.name === 'gemini' && isLivePath(route.path)
}

/**
 * WebSocket upgrades of proxied paths (Codex's `GET /v1/responses`), passed through: the
 * upstream is asked first (ws://, or wss:// for an https upstream) with the client's headers,
 * and only once it has accepted is the client's handshake completed, with the upstream's
 * headers; an upstream that refuses has its answer relayed as it came. Frames then pass both
 * ways unchanged (text stays text, binary stays binary); on a Responses socket each response is
 * metered and recorded as its own call (responses-calls.ts), and so on a Realtime API socket
 * (realtime-calls.ts); on a Gemini Live API socket each turn is (gemini-live-calls.ts).
 *
 * Here: an upgrade refused or passed on, the two sockets of one joined, and shutdown. The upstream
 * asked first and the client's handshake are ./upstream-connect.ts (the ws library ./ws-library.ts);
 * the frames both ways ./relay-frames.ts; how either side's end reaches the other ./relay-close.ts.
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
        const go = (ok: boolean) => {
          if (ok && !socket.destroyed) connectUpstream(ws, hs, opts, req, socket, head, route, relay)
        }
        if (socket.destroyed) return
        // A Realtime or Gemini Live socket is admitted by the budgets first (./realtime-upgrade.ts).
        if (!isRealtime(route) && !isGeminiLive(route)) return go(true)
        const ok = admitUpgrade(opts, req, socket, route)
        if (ok instanceof Promise) void ok.then(go)
        else go(ok)
      },
      () => answerError(socket, 500, 'internal', 'Burnrate could not load its WebSocket support.'),
    )
  }

  function relay(client: WebSocket, up: WebSocket, req: IncomingMessage, route: Route): void {
    sockets.add(client)
    const calls: SocketCalls | null = /(^|\/)responses$/.test(meteredPath(route))
      ? new ResponsesSocketCalls(opts.life, route, req.headers, opts.who, opts.observeHeaders, hs.upgradeAnswers.get(req) ?? null, opts.timeouts.idle_timeout_ms)
      : isRealtime(route)
        ? new RealtimeSocketCalls(opts.life, route, req.headers, opts.who, opts.timeouts.connect_timeout_ms)
        : isGeminiLive(route)
          ? new GeminiLiveSocketCalls(opts.life, route, req.headers, opts.who)
          : null
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

    // The client's messages take their share of the memory for request bodies (./message-memory.ts).
    const held = countMessages(client, req.socket, opts.memory, opts.maxFrameBytes)
    relayFrames(client, up, calls, silence, held)
    relayCloses(client, up, calls, silence, route, opts, sockets, req.socket)
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
