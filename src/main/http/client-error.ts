import type { ServerResponse } from 'node:http'
import type { Duplex } from 'node:stream'
import { errorBody } from './errors'

/** Messages for the HTTP parser's refusals (llhttp error codes), for a person to act on. */
const MESSAGES: Record<string, string> = {
  HPE_HEADER_OVERFLOW: 'The request headers are too large (over 16 KiB); send smaller headers.',
  HPE_INVALID_HEADER_TOKEN: 'A request header name or value holds characters HTTP does not allow.',
  HPE_INVALID_CONTENT_LENGTH: 'The Content-Length header is not a valid length.',
  HPE_UNEXPECTED_CONTENT_LENGTH: 'The request has both Content-Length and Transfer-Encoding; send one.',
  HPE_INVALID_TRANSFER_ENCODING: 'The Transfer-Encoding header is not valid.',
  HPE_INVALID_CHUNK_SIZE: 'The chunked request body is malformed.',
  HPE_INVALID_METHOD: 'The request method is not valid.',
  HPE_INVALID_URL: 'The request URL is not valid.',
  HPE_INVALID_VERSION: 'The HTTP version is not valid; send HTTP/1.1.',
  ERR_HTTP_REQUEST_TIMEOUT: 'The request did not arrive in time.',
}

/**
 * The server's `clientError` handler: a request the HTTP parser refuses (malformed, headers too
 * large, ...) gets the contract's JSON error instead of Node's bare `400 Bad Request`, and the
 * connection is closed. Nothing of the request is echoed.
 */
export function answerClientError(err: Error & { code?: string }, socket: Duplex): void {
  const message = (socket as Duplex & { _httpMessage?: ServerResponse | null })._httpMessage
  if (err.code === 'ECONNRESET' || err.code === 'HPE_CLOSED_CONNECTION' || !socket.writable) {
    socket.destroy()
    return
  }
  // What cannot be read came behind a whole request still being answered (pipelined after it): that
  // answer goes first, then this one. Answered at once, the 400 took that answer's place (the
  // client read it as its call's answer, cut short) while its call went on to the provider.
  if (message && message.req?.complete && !message.writableFinished) {
    message.once('finish', () => {
      if (socket.writable) answerClientError(err, socket)
    })
    return
  }
  if (message?.headersSent) {
    socket.destroy()
    return
  }
  const text = JSON.stringify(
    errorBody('invalid_request', MESSAGES[err.code ?? ''] ?? 'The request is not valid HTTP/1.1; it could not be read.'),
  )
  socket.end(
    'HTTP/1.1 400 Bad Request\r\ncontent-type: application/json; charset=utf-8\r\n' +
      `content-length: ${Buffer.byteLength(text)}\r\nconnection: close\r\n\r\n${text}`,
  )
}
