/**
 * Bench child: the road not taken, a minimal express + http-proxy-middleware pass-through to
 * `TARGET` (env), with a keep-alive agent like the others. No metering: it is the floor of
 * what forwarding through express and http-proxy-middleware costs. Prints "listening on <url>".
 */
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import express from 'express'
import { createProxyMiddleware } from 'http-proxy-middleware'

const target = process.env.TARGET ?? ''
const app = express()
app.use(
  createProxyMiddleware({
    target,
    changeOrigin: true,
    agent: new http.Agent({ keepAlive: true, keepAliveMsecs: 30_000, maxFreeSockets: 64 }),
  }),
)
const server = http.createServer({ keepAliveTimeout: 65_000, requestTimeout: 0 }, app)
server.listen(0, '127.0.0.1', () => {
  const { port } = server.address() as AddressInfo
  process.stdout.write(`listening on http://127.0.0.1:${port}\n`)
})
process.on('SIGTERM', () => process.exit(0))
