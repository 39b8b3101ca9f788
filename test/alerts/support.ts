import http from 'node:http'
import type { AddressInfo } from 'node:net'

/** A webhook receiver on loopback: records every POST; `failFirst` answers 500 to that many first. */
export async function receiver(failFirst = 0) {
  const got: { path: string; body: any }[] = []
  let failures = failFirst
  const server = http.createServer(async (req, res) => {
    const parts: Buffer[] = []
    for await (const c of req) parts.push(c as Buffer)
    if (failures > 0) {
      failures--
      res.writeHead(500).end('try later')
      return
    }
    got.push({ path: req.url ?? '', body: JSON.parse(Buffer.concat(parts).toString('utf8')) })
    res.writeHead(204).end()
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return { url, got, close: () => new Promise<void>((r) => server.close(() => r())) }
}

export type Receiver = Awaited<ReturnType<typeof receiver>>

/** A webhook receiver on loopback that reads each POST and never answers; `posts` counts them. */
export async function hangingReceiver() {
  let posts = 0
  const server = http.createServer((req) => {
    req.resume()
    req.on('end', () => posts++)
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return {
    url,
    posts: () => posts,
    close: () => new Promise<void>((r) => {
      server.close(() => r())
      server.closeAllConnections()
    }),
  }
}
