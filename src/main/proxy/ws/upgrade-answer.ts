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

type AnswerHeaders = Record<string, string | string[] | number | undefined>

/** An answer's status line and headers, with `connection: close`. */
function answerHead(status: number, headers: AnswerHeaders): Buffer {
  let head = `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\n`
  for (const [k, v] of Object.entries({ ...headers, connection: 'close' })) {
    if (v === undefined) continue
    for (const one of Array.isArray(v) ? v : [v]) head += `${k}: ${String(one).replace(/[\r\n]/g, ' ')}\r\n`
  }
  return Buffer.from(`${head}\r\n`, 'latin1')
}

/** An HTTP answer written on the raw socket of an upgrade request that is not upgraded. */
export function answer(socket: Duplex, status: number, headers: AnswerHeaders, body: Buffer): void {
  if (socket.destroyed) return
  endAndClose(socket, Buffer.concat([answerHead(status, { ...headers, 'content-length': body.length }), body]))
}

/** The most of a refused upgrade's answer body passed on; past it the answer is cut. */
export const MAX_REFUSAL_BODY = 1024 * 1024

/**
 * The upstream's refusal of an upgrade (an answer other than 101: 401, 429, 503...) passed on to
 * the client as it comes: its status and headers at once, then its body, framed as the upstream
 * framed it (its Content-Length, chunked, else up to the connection's close). The body is cut (the
 * client's connection closed before its end) when it goes quiet for `idleMs` (upstream.idle_timeout_ms,
 * as any answer's silence) or passes MAX_REFUSAL_BODY: an answer whose body never ended held the
 * client until the whole upgrade's time limit, with no status. `done` is called once, when the
 * body ended, was cut or the client went away; the upstream connection is then to be closed.
 */
export function relayRefusal(socket: Duplex, res: IncomingMessage, idleMs: number, done: () => void): void {
  let finished = false
  const finish = (cut: boolean): void => {
    if (finished) return
    finished = true
    clearTimeout(timer)
    res.removeAllListeners('data')
    res.resume()
    if (cut) socket.destroy()
    else endAndClose(socket)
    done()
  }
  const timer = setTimeout(() => finish(true), idleMs)
  res.on('error', () => finish(true))
  res.once('close', () => finish(true))
  if (socket.destroyed) {
    finish(true)
    return
  }
  // The client gone (its end: the server keeps such a connection half-open).
  socket.once('close', () => finish(true))
  socket.once('end', () => finish(true))
  const headers: AnswerHeaders = clientResponseHeaders(res.headers)
  // A chunked body arrives decoded: it goes on chunked (each piece as it came), so a cut shows as one.
  const chunked = res.headers['transfer-encoding'] !== undefined
  if (chunked) {
    delete headers['content-length']
    headers['transfer-encoding'] = 'chunked'
  }
  socket.write(answerHead(res.statusCode ?? 502, headers))
  let sent = 0
  res.on('data', (chunk: Buffer) => {
    sent += chunk.length
    if (sent > MAX_REFUSAL_BODY) return finish(true)
    timer.refresh()
    if (chunked) socket.write(`${chunk.length.toString(16)}\r\n`)
    if (!socket.write(chunked ? Buffer.concat([chunk, CRLF]) : chunk)) {
      res.pause()
      socket.once('drain', () => {
        if (finished) return
        timer.refresh()
        res.resume()
      })
    }
  })
  res.once('end', () => {
    if (chunked && !finished) socket.write('0\r\n\r\n')
    finish(false)
  })
}

const CRLF = Buffer.from('\r\n')

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
