import { createHash } from 'node:crypto'
import http from 'node:http'
import net from 'node:net'
import type { AddressInfo } from 'node:net'

/** One request as the agent sent it and the response as the agent got it (SHA-256 of the bodies). */
export interface Seen {
  method: string
  url: string
  requestSha: string
  responseSha: string
}

export interface Relay {
  url: string
  seen: Seen[]
  /** The path of each WebSocket upgrade the agent asked for. */
  upgrades: string[]
  close(): Promise<void>
}

/**
 * Sits between an agent CLI and Burnrate on loopback and notes the bodies as the agent sent and
 * received them, so the suite can check that they reached the mock upstream, and came back,
 * byte for byte. Passes everything on unchanged (WebSocket upgrades as a raw byte pipe).
 */
export async function startRelay(target: string): Promise<Relay> {
  const t = new URL(target)
  const seen: Seen[] = []
  const upgrades: string[] = []
  const handler: http.RequestListener = (req, res) => {
    const inHash = createHash('sha256')
    const up = http.request(
      { host: t.hostname, port: t.port, method: req.method, path: req.url, headers: { ...req.headers, host: t.host }, agent: false },
      (ures) => {
        res.writeHead(ures.statusCode ?? 502, ures.headers)
        const outHash = createHash('sha256')
        ures.on('data', (c: Buffer) => {
          outHash.update(c)
          res.write(c)
        })
        ures.on('end', () => {
          seen.push({ method: req.method ?? '', url: req.url ?? '', requestSha: inHash.digest('hex'), responseSha: outHash.digest('hex') })
          res.end()
        })
      },
    )
    up.on('error', () => res.destroy())
    req.on('data', (c: Buffer) => {
      inHash.update(c)
      up.write(c)
    })
    req.on('end', () => up.end())
  }
  const server = http.createServer(handler)
  server.on('upgrade', (req, socket, head) => {
    upgrades.push(req.url ?? '')
    const up = net.connect(Number(t.port), t.hostname, () => {
      let headText = `${req.method} ${req.url} HTTP/1.1\r\n`
      for (let i = 0; i < req.rawHeaders.length; i += 2) {
        const name = req.rawHeaders[i]
        headText += `${name}: ${name.toLowerCase() === 'host' ? t.host : req.rawHeaders[i + 1]}\r\n`
      }
      up.write(`${headText}\r\n`)
      if (head.length) up.write(head)
      socket.pipe(up).pipe(socket)
    })
    up.on('error', () => socket.destroy())
    socket.on('error', () => up.destroy())
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    seen,
    upgrades,
    async close() {
      server.closeAllConnections()
      await new Promise<void>((r) => server.close(() => r()))
    },
  }
}
