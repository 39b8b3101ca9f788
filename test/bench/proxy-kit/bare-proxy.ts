/**
 * Bench child: the baseline, a bare node:http pass-through proxy to `TARGET` (env). It does
 * the least a correct proxy must: rewrite Host, drop hop-by-hop headers, stream both bodies,
 * keep upstream connections alive. No metering. Prints "listening on <url>" when ready.
 */
import http from 'node:http'
import type { AddressInfo } from 'node:net'

const target = new URL(process.env.TARGET ?? '')
const agent = new http.Agent({ keepAlive: true, keepAliveMsecs: 30_000, maxFreeSockets: 64 })
const HOP = ['connection', 'keep-alive', 'transfer-encoding', 'te', 'trailer', 'upgrade', 'proxy-connection']

const server = http.createServer({ keepAliveTimeout: 65_000, requestTimeout: 0 }, (req, res) => {
  const headers: http.OutgoingHttpHeaders = { ...req.headers, host: target.host }
  for (const h of HOP) delete headers[h]
  const ureq = http.request(
    { hostname: target.hostname, port: target.port, method: req.method, path: req.url, headers, agent },
    (ures) => {
      const out: http.OutgoingHttpHeaders = { ...ures.headers }
      for (const h of HOP) delete out[h]
      res.writeHead(ures.statusCode ?? 502, out)
      ures.pipe(res)
    },
  )
  ureq.on('error', () => {
    if (!res.headersSent) res.writeHead(502)
    res.end()
  })
  req.pipe(ureq)
})
server.listen(0, '127.0.0.1', () => {
  const { port } = server.address() as AddressInfo
  process.stdout.write(`listening on http://127.0.0.1:${port}\n`)
})
process.on('SIGTERM', () => process.exit(0))
