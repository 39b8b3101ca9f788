import http from 'node:http'
import type { AddressInfo } from 'node:net'

/** A webhook receiver down for its first POST (500), then taking them (204): every POST's body, and how many came. */
export async function downOnceReceiver() {
  const got: any[] = []
  let posts = 0
  const server = http.createServer(async (req, res) => {
    const parts: Buffer[] = []
    for await (const c of req) parts.push(c as Buffer)
    if (posts++ === 0) {
      res.writeHead(500).end('down')
      return
    }
    got.push(JSON.parse(Buffer.concat(parts).toString('utf8')))
    res.writeHead(204).end()
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return { url, got, posts: () => posts, close: () => new Promise<void>((r) => server.close(() => r())) }
}
