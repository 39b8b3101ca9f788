// Bench child: the start-up and memory baseline, the smallest Node HTTP server (node:http, one
// route answering 200 JSON as /api/health does), run as plain JavaScript by plain node (no
// TypeScript loader, no libraries). Prints "listening on <url>" when ready.
import http from 'node:http'
import process from 'node:process'

const server = http.createServer((_req, res) => {
  res.writeHead(200, { 'content-type': 'application/json' })
  res.end('{"status":"ok"}')
})
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`listening on http://127.0.0.1:${server.address().port}\n`)
})
process.on('SIGTERM', () => process.exit(0))
