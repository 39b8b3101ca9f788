/**
 * Bench child: the second baseline, a bare pass-through proxy to `TARGET` (env) that forwards
 * with undici as Burnrate does (one keep-alive Pool, `dispatch` with a handler, the body passed
 * chunk by chunk with backpressure), behind the same node:http server. No metering. It is the
 * floor of Burnrate's own forwarding: the bare node:http proxy shows what a plain Node proxy
 * costs, this one what undici's pooling saves by itself. Prints "listening on <url>" when ready.
 */
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { type Dispatcher, Pool } from 'undici'

const target = new URL(process.env.TARGET ?? '')
const pool = new Pool(target.origin, { keepAliveTimeout: 30_000, headersTimeout: 0, bodyTimeout: 0 })
const HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'te', 'trailer', 'upgrade', 'proxy-connection', 'host'])

const server = http.createServer({ keepAliveTimeout: 65_000, requestTimeout: 0 }, (req, res) => {
  const headers: Record<string, string | string[]> = {}
  for (const name in req.headers) if (!HOP.has(name)) headers[name] = req.headers[name]!
  headers.host = target.host
  const chunks: Buffer[] = []
  req.on('data', (c: Buffer) => chunks.push(c))
  req.on('end', () => {
    const body = chunks.length === 0 ? null : chunks.length === 1 ? chunks[0] : Buffer.concat(chunks)
    pool.dispatch({ origin: target.origin, method: req.method as Dispatcher.HttpMethod, path: req.url ?? '/', headers, body }, {
      onConnect() {},
      onHeaders(status, raw, resume) {
        const out: Record<string, string> = {}
        for (let i = 0; i + 1 < raw.length; i += 2) {
          const name = raw[i].toString('latin1').toLowerCase()
          if (!HOP.has(name)) out[name] = raw[i + 1].toString('latin1')
        }
        res.writeHead(status, out)
        res.on('drain', () => resume())
        return true
      },
      onData(chunk) {
        return res.write(chunk)
      },
      onComplete() {
        res.end()
      },
      onError() {
        if (!res.headersSent) res.writeHead(502)
        res.end()
      },
    })
  })
})
server.listen(0, '127.0.0.1', () => {
  const { port } = server.address() as AddressInfo
  process.stdout.write(`listening on http://127.0.0.1:${port}\n`)
})
process.on('SIGTERM', () => process.exit(0))
