import net, { type AddressInfo } from 'node:net'

/**
 * An upstream written on the bare socket, for answers node:http would not send (a reset after the
 * headers, headers past its limits, a `Trailer:` it would chunk): each whole request (its head and
 * a Content-Length body) is handed to `answer` with the socket, which writes what it likes.
 */
export interface RawUpstream {
  url: string
  close(): Promise<void>
}

export async function startRawUpstream(answer: (sock: net.Socket, request: string) => void): Promise<RawUpstream> {
  const sockets = new Set<net.Socket>()
  const server = net.createServer((sock) => {
    sockets.add(sock)
    sock.on('close', () => sockets.delete(sock))
    sock.on('error', () => {})
    let buf = ''
    sock.on('data', (d) => {
      buf += d.toString('latin1')
      const end = buf.indexOf('\r\n\r\n')
      if (end < 0) return
      const length = Number(/\r\ncontent-length: *(\d+)/i.exec(buf.slice(0, end))?.[1] ?? 0)
      if (buf.length - end - 4 < length) return
      const request = buf
      buf = ''
      answer(sock, request)
    })
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: async () => {
      for (const s of sockets) s.destroy()
      await new Promise<void>((r) => server.close(() => r()))
    },
  }
}
