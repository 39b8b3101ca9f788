import http from 'node:http'
import net from 'node:net'
import type { AddressInfo } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { limitConnections } from './connections'

let server: http.Server | null = null
const sockets: net.Socket[] = []
afterEach(async () => {
  for (const s of sockets) s.destroy()
  sockets.length = 0
  server?.closeAllConnections()
  await new Promise<void>((r) => (server ? server.close(() => r()) : r()))
  server = null
})

function connect(port: number, text: string): Promise<{ socket: net.Socket; reply: Promise<string> }> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1', () => {
      socket.write(text)
      let got = ''
      const reply = new Promise<string>((r) => {
        socket.on('data', (d) => {
          got += d.toString()
          if (got.includes('\r\n\r\n')) r(got)
        })
        socket.on('close', () => r(got))
      })
      resolve({ socket, reply })
    })
    socket.on('error', () => {})
    sockets.push(socket)
  })
}

describe('limitConnections', () => {
  it('never closes a connection handed to an upgrade handler (a WebSocket) to make room: a new one is refused instead', async () => {
    server = http.createServer((_req, res) => res.end('ok'))
    server.on('upgrade', (_req, socket) => {
      sockets.push(socket as net.Socket)
      socket.write('HTTP/1.1 101 Switching Protocols\r\nupgrade: test\r\nconnection: upgrade\r\n\r\n')
    })
    limitConnections(server, 10)
    await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r))
    const port = (server.address() as AddressInfo).port
    const upgrades = []
    for (let i = 0; i < 10; i++) {
      const c = await connect(port, 'GET / HTTP/1.1\r\nHost: x\r\nConnection: upgrade\r\nUpgrade: test\r\n\r\n')
      expect(await c.reply).toMatch(/^HTTP\/1\.1 101/)
      upgrades.push(c.socket)
    }
    const extra = await connect(port, 'GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n')
    expect(await extra.reply).toMatch(/^HTTP\/1\.1 503/)
    expect(upgrades.every((s) => !s.destroyed && !s.readableEnded)).toBe(true)
  })
})
