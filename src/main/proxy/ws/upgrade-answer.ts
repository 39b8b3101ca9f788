import type { IncomingMessage } from 'node:http'
import { STATUS_CODES } from 'node:http'
import type { Duplex } from 'node:stream'
import { errorBody } from '../../http/errors'
import { clientResponseHeaders } from '../headers'

/**
 * What the client of a WebSocket upgrade is answered on its raw socket: an HTTP answer when the
 * upgrade is not relayed (refused here, or by the upstream), and the upstream's 101 headers
 * passed on when it is.
 */

/** An HTTP answer written on the raw socket of an upgrade request that is not upgraded. */
export function answer(socket: Duplex, status: number, headers: Record<string, string | string[] | number | undefined>, body: Buffer): void {
  if (socket.destroyed) return
  let head = `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\n`
  for (const [k, v] of Object.entries({ ...headers, 'content-length': body.length, connection: 'close' })) {
    if (v === undefined) continue
    for (const one of Array.isArray(v) ? v : [v]) head += `${k}: ${String(one).replace(/[\r\n]/g, ' ')}\r\n`
  }
  endAndClose(socket, Buffer.concat([Buffer.from(`${head}\r\n`, 'latin1'), body]))
}

/**
 * Ends the connection of an upgrade request that is not upgraded, once `last` (and all written
 * before it) is sent, and then closes it. Node's HTTP server has let go of such a connection and
 * keeps it half-open after its end: a client that never closed its side held it for good, counted
 * against `server.max_connections` and never closed to make room (it is not idle HTTP), so a
 * program that sent that many upgrades and kept them open had every later connection refused 503.
 */
export function endAndClose(socket: Duplex, last?: Buffer): void {
  socket.once('finish', () => socket.destroy())
  socket.end(last)
}

export function answerError(socket: Duplex, status: number, type: Parameters<typeof errorBody>[0], message: string): void {
  answer(socket, status, { 'content-type': 'application/json; charset=utf-8' }, Buffer.from(JSON.stringify(errorBody(type, message))))
}

/** Headers of the upstream's 101 worth passing on (Codex reads `x-codex-turn-state`, `openai-model`...). */
export function passedOn(headers: IncomingMessage['headers']): string[] {
  const out: string[] = []
  const h = clientResponseHeaders(headers)
  for (const [k, v] of Object.entries(h)) {
    if (k.startsWith('sec-websocket-') || k === 'content-length' || v === undefined) continue
    for (const one of Array.isArray(v) ? v : [v]) out.push(`${k}: ${String(one).replace(/[\r\n]/g, ' ')}`)
  }
  return out
}
