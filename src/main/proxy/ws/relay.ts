import type { IncomingMessage } from 'node:http'
import type { Duplex } from 'node:stream'
import type { Agent } from 'node:http'
import type WebSocket from 'ws'
import type { WebSocketServer } from 'ws'
import type { ProxyRule } from '../../http/network'
import { describeNetworkError } from '../call/network-errors'
import type { Attributors } from '../call/context'
import type { HeadersObserver } from '../call/forward'
import type { CallLifecycle } from '../call/lifecycle'
import { clientResponseHeaders, upstreamRequestHeaders } from '../headers'
import { type Route, upstreamPath } from '../routes'
import { ResponsesSocketCalls } from './responses-calls'
import { answer, answerError, passedOn } from './upgrade-answer'
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
/** The two classes of the ws library this relay uses, and the tunnel through a proxy (http/tunnel.ts) when one is set. */
interface WsLib {
  WebSocket: typeof WebSocket
  WebSocketServer: typeof WebSocketServer
  /** The agent that tunnels through `proxy`, CONNECT or SOCKS5 (for ws:// and wss:// alike). */
  tunnel: ((proxy: string) => Agent) | null
}

export function createWebSocketRelay(opts: WebSocketRelayOptions) {
  let wss: WebSocketServer | null = null
  const extraHeaders = new WeakMap<IncomingMessage, string[]>()
  const upgradeAnswers = new WeakMap<IncomingMessage, IncomingMessage['headers']>()
  // The subprotocol the upstream chose for an upgrade (none: unset), which the client is answered.
  const chosenProtocols = new WeakMap<IncomingMessage, string>()
  const sockets = new Set<WebSocket>()
  // Upgrade requests whose proxy refused the tunnel, with the proxy's status (not the upstream's answer).
  const refusedByProxy = new WeakMap<object, number>()

  // The ws library is loaded with the first upgrade (most servers never see one), and tried again
  // by the next upgrade if it failed. The prices too: the calls an upgrade carries are priced
  // (../../pricing/library.ts).
  const loadWs = loadOnce(() =>
    Promise.all([import('ws'), opts.proxy ? import('../../http/tunnel') : null, opts.pricesReady()]).then(([m, tunnelLib]) => {
      const ws: WsLib = { WebSocket: m.default, WebSocketServer: m.WebSocketServer, tunnel: tunnelLib && tunnels(tunnelLib.tunnelAgent) }
      wss = new ws.WebSocketServer({
        noServer: true,
        perMessageDeflate: true,
        maxPayload: opts.maxFrameBytes,
        // Both ends speak the subprotocol the upstream chose (one the client offered), or none if it chose none.
        handleProtocols: (offered, r) => {
          const chosen = chosenProtocols.get(r)
          return chosen !== undefined && offered.has(chosen) ? chosen : false
        },
      })
      wss.on('headers', (headers, r) => {
        const extra = extraHeaders.get(r)
        if (extra) headers.push(...extra)
      })
      return ws
    }),
  )

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
        if (!socket.destroyed) passThrough(ws, req, socket, head, route)
      },
      () => answerError(socket, 500, 'internal', 'Burnrate could not load its WebSocket support.'),
    )
  }

  /** One tunnelling agent per proxy; it marks the upgrades whose CONNECT the proxy refused. */
  function tunnels(tunnelAgent: typeof import('../../http/tunnel').tunnelAgent): (proxy: string) => Agent {
    const agents = new Map<string, Agent>()
    return (proxy) => {
      let agent = agents.get(proxy)
      if (!agent) {
        const a = tunnelAgent(proxy, { ca: opts.ca })
        a.on('proxyConnect', (connect: { statusCode: number }, r: object) => {
          if (connect.statusCode !== 200) refusedByProxy.set(r, connect.statusCode)
        })
        agents.set(proxy, (agent = a))
      }
      return agent
    }
  }

  function passThrough({ WebSocket, tunnel }: WsLib, req: IncomingMessage, socket: Duplex, head: Buffer, route: Route): void {
    const upstream = route.upstream
    const provider = upstream.provider
    const target = upstream.origin.replace(/^http/i, 'ws') + upstreamPath(route)
    const proxy = tunnel && opts.proxy?.(upstream.origin)
    const headers = upstreamRequestHeaders(req.headers, upstream.host)
    for (const name of Object.keys(headers)) if (name.startsWith('sec-websocket-')) delete headers[name]
    // The client's offer goes as it came, not as the ws library's `protocols`: that would fail an
    // upstream that accepts without choosing one (RFC 6455 allows it). Its choice is read at 'upgrade'.
    const offer = req.headers['sec-websocket-protocol']
    if (offer) headers['sec-websocket-protocol'] = offer
    const up = new WebSocket(target, [], {
      headers: headers as Record<string, string>,
      perMessageDeflate: true,
      maxPayload: opts.maxFrameBytes,
      handshakeTimeout: opts.timeouts.connect_timeout_ms + opts.timeouts.first_byte_timeout_ms,
      ...(opts.ca ? { ca: opts.ca } : {}),
      ...(proxy ? { agent: tunnel(proxy) } : {}),
    })
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
      const proxyStatus = refusedByProxy.get(r)
      if (proxyStatus !== undefined) {
        res.resume()
        up.terminate()
        unreachable(new Error(`Proxy response (${proxyStatus})`))
        return
      }
      // The upstream refused the upgrade: its answer goes to the client as it came.
      const parts: Buffer[] = []
      res.on('data', (c: Buffer) => parts.push(c))
      res.on('end', () => {
        answer(socket, res.statusCode ?? 502, clientResponseHeaders(res.headers) as Record<string, string>, Buffer.concat(parts))
        up.terminate()
      })
      res.on('error', () => answerError(socket, 502, 'upstream_unreachable', `${provider.name} (${upstream.host}) cut its answer to the WebSocket upgrade.`))
    })
    up.on('error', (err) => {
      if (settled) return
      settled = true
      if (/timed out/i.test(err.message)) {
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
      const message = `Could not reach ${provider.name} at ${upstream.host}: ${why}.`
      answerError(socket, 502, 'upstream_unreachable', message)
      // No call was made, so no ledger row: the log is where a failing upgrade (Codex reconnecting) shows.
      opts.warn?.(`${message} (WebSocket)`)
    }
    up.on('upgrade', (res) => {
      extraHeaders.set(req, passedOn(res.headers))
      upgradeAnswers.set(req, res.headers)
      const chosen = res.headers['sec-websocket-protocol']
      if (chosen !== undefined) {
        chosenProtocols.set(req, chosen)
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
      wss!.handleUpgrade(req, socket, head, (client) => {
        relayed = true
        relay(client, up, req, route)
      })
    })
  }

  function relay(client: WebSocket, up: WebSocket, req: IncomingMessage, route: Route): void {
    sockets.add(client)
    const metered = /(^|\/)responses$/.test(route.path)
    const calls = metered ? new ResponsesSocketCalls(opts.life, route, req.headers, opts.who, opts.observeHeaders, upgradeAnswers.get(req) ?? null) : null
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
