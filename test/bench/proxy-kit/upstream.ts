/**
 * Bench child: a tiny provider stand-in on 127.0.0.1 that answers from recorded fixtures.
 *   POST /v1/chat/completions -> openai-chat/chat-nonstream-cached.json (one JSON body)
 *   POST /v1/messages         -> anthropic/messages-stream-tool-use.sse, one write per SSE event,
 *                                each on its own event-loop turn so they leave as separate chunks
 *   POST /v1/traces, /v1/metrics -> 200 {} (an OTLP collector that keeps nothing)
 * Prints "listening on <url>" on stdout when ready.
 */
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { BENCH_JSON, BENCH_SSE_CHUNKS } from './fixtures'

const jsonHeaders = {
  'content-type': 'application/json',
  'content-length': String(BENCH_JSON.length),
  'openai-processing-ms': '512',
  'x-request-id': 'req_bench000000000000000000000000',
}
const sseHeaders = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache',
  'request-id': 'req_bench000000000000000000000000',
}

function stream(res: http.ServerResponse, i: number): void {
  if (res.destroyed) return
  if (i === BENCH_SSE_CHUNKS.length) {
    res.end()
    return
  }
  res.write(BENCH_SSE_CHUNKS[i])
  setImmediate(stream, res, i + 1)
}

const server = http.createServer((req, res) => {
  req.resume()
  req.on('end', () => {
    const url = req.url ?? ''
    if (url.startsWith('/v1/chat/completions')) {
      res.writeHead(200, jsonHeaders)
      res.end(BENCH_JSON)
    } else if (url.startsWith('/v1/messages')) {
      res.writeHead(200, sseHeaders)
      res.flushHeaders()
      setImmediate(stream, res, 0)
    } else if (url === '/v1/traces' || url === '/v1/metrics') {
      // The OTLP collector of the bench's metrics-on Burnrate.
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end('{}')
    } else {
      res.writeHead(404, { 'content-type': 'application/json' })
      res.end('{"error":{"type":"not_found","message":"bench mock: unknown path"}}')
    }
  })
})
server.keepAliveTimeout = 120_000
server.listen(0, '127.0.0.1', () => {
  const { port } = server.address() as AddressInfo
  process.stdout.write(`listening on http://127.0.0.1:${port}\n`)
})
process.on('SIGTERM', () => process.exit(0))
