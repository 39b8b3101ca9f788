import http from 'node:http'
import type { Socket } from 'node:net'
import { answerClientError } from '../http/client-error'
import { sendError } from '../http/errors'
import { dropUnreadBody } from '../http/unread-body'
import type { Logger } from '../log'
import type { ProxyHandler } from '../proxy/handler'
import { endAndClose } from '../proxy/ws/upgrade-answer'
import type { Router } from '../proxy/routes'
import type { RequestGuard } from '../security/guard'
import type { ApiApp } from './api-app'
import type { ServerContext } from './context'
import type { IdleCollector } from './idle-gc'

export interface Dispatch {
  /** Every request of every listening address: a proxied call to the proxy, anything else to the API app. */
  onRequest: http.RequestListener
  /** Gives a listening socket's server the WebSocket upgrade path and the client-error answer. */
  setUp(s: http.Server): http.Server
}

/**
 * Where each request goes, after the host, cross-site and dashboard-token checks (`guard`): a
 * provider's path to the proxy (through `aroundProxy` when a feature wraps it), a WebSocket
 * upgrade of one to the proxy's relay (Codex's Responses socket), everything else to the API app.
 * Every request tells the idle collector the server is not quiet.
 */
export function createDispatch(d: {
  router: Router
  guard: RequestGuard
  idle: IdleCollector | null
  proxy: ProxyHandler
  app: ApiApp
  context: ServerContext
  log: Logger
}): Dispatch {
  const { router, guard, idle, proxy, app, context, log } = d
  const onRequest: http.RequestListener = (req, res) => {
    const route = router.match(req.url ?? '/', req.headers)
    if (route) idle?.call()
    else idle?.touch()
    if (!guard(req, res, route !== null)) return
    if (route && (req.method === 'TRACE' || req.method === 'TRACK')) {
      // TRACE echoes the request (credentials included) back; no provider API needs it.
      refuseMethod(res, req.method)
      dropUnreadBody(req)
      return
    }
    if (route) {
      const handle = (): void => {
        proxy.handle(req, res, route).catch((err: Error) => {
          // A bug on the hot path costs this call, never the process.
          log.error(`proxy: ${err?.message ?? String(err)}`)
          if (!res.headersSent) sendError(res, 'internal', 'Burnrate hit an internal error with this call; the details are in its log.')
          else res.destroy()
        })
      }
      const around = context.aroundProxy
      if (around) around(route.upstream.provider.name, handle)
      else handle()
    }
    else app.handle(req, res)
  }
  const setUp = (s: http.Server): http.Server => {
    // WebSocket upgrades of proxied paths go through to the upstream (Codex's Responses socket),
    // past the same guard. Any other upgrade request is answered as the plain request it also is.
    const upgrade = (req: http.IncomingMessage, socket: Socket, head: Buffer): void => {
      const res = new http.ServerResponse(req)
      res.assignSocket(socket)
      res.shouldKeepAlive = false
      res.on('finish', () => endAndClose(socket))
      const route = router.match(req.url ?? '/', req.headers)
      const websocket = route !== null && req.method === 'GET' && /^websocket$/i.test(String(req.headers.upgrade ?? ''))
      if (!websocket) {
        // onRequest tells the idle collector, as for any request.
        onRequest(req, res)
        return
      }
      idle?.call()
      if (!guard(req, res, true)) return
      res.detachSocket(socket)
      proxy.upgrade(req, socket, head, route)
    }
    s.on('upgrade', (req: http.IncomingMessage, socket: Socket, head: Buffer) => {
      socket.on('error', () => {})
      afterEarlierAnswers(socket, () => upgrade(req, socket, head))
    })
    s.on('clientError', answerClientError)
    return s
  }
  return { onRequest, setUp }
}

/**
 * Runs `then` once every answer to the requests before an upgrade on its connection is sent. A
 * client may pipeline an upgrade behind a request: Node hands the socket over at once, while that
 * request's answer still holds it, and taking it then threw out of Node's parser
 * (ERR_HTTP_SOCKET_ASSIGNED), which ended the process: one write of any local program stopped
 * every agent's proxy.
 */
function afterEarlierAnswers(socket: Socket, then: () => void): void {
  const earlier = (socket as Socket & { _httpMessage?: http.ServerResponse | null })._httpMessage
  if (!earlier) {
    then()
    return
  }
  // (Node's own 'finish' listener, added first, has let go of the socket or handed it to the next answer.)
  earlier.once('finish', () => {
    if (socket.destroyed || !socket.writable) return
    // Node gave the connection its keep-alive timeout as that answer ended; an upgrade has none.
    socket.setTimeout(0)
    afterEarlierAnswers(socket, then)
  })
}

/** 405 `method_not_allowed` for a method Burnrate never passes upstream (its type says what its status says). */
function refuseMethod(res: http.ServerResponse, method: string): void {
  sendError(res, 'method_not_allowed', `${method} is not passed to providers; use GET or POST.`, undefined, {
    allow: 'GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS',
  })
}
