import net from 'node:net'

/** How much a client would have to have sent for the server to have read a body past all bounds. */
export const FAR_PAST = 256 * 1024 * 1024

export interface Streamed {
  /** Bytes of body sent before the server closed the connection (or FAR_PAST). */
  sent: number
  closed: boolean
  /** The answer's status line, when one came. */
  status: string
}

/**
 * Sends `head` (request line and headers, each ending in CRLF, without the blank line) with a body
 * of 10 GB by Content-Length, or chunked when `chunked`, and keeps sending until the server closes
 * the connection or FAR_PAST bytes have gone.
 */
export async function streamBody(port: number, head: string, chunked = false): Promise<Streamed> {
  const sock = net.connect({ port, host: '127.0.0.1', allowHalfOpen: true })
  await new Promise((r) => sock.once('connect', r))
  let answer = ''
  let closed = false
  sock.on('data', (d) => {
    answer += d.toString('latin1')
  })
  sock.on('error', () => {
    closed = true
  })
  sock.on('close', () => {
    closed = true
  })
  sock.write(`${head}${chunked ? 'Transfer-Encoding: chunked' : 'Content-Length: 10000000000'}\r\n\r\n`)
  const body = Buffer.alloc(256 * 1024, 'a')
  const chunk = chunked ? Buffer.concat([Buffer.from(`${body.length.toString(16)}\r\n`), body, Buffer.from('\r\n')]) : body
  let sent = 0
  try {
    while (!closed && sent < FAR_PAST) {
      if (!sock.write(chunk)) await new Promise<void>((r) => sock.once('drain', () => r()).once('close', () => r()))
      sent += body.length
    }
  } finally {
    sock.destroy()
  }
  return { sent, closed, status: answer.split('\r\n')[0] }
}

/**
 * Sends `head` with `Content-Length: 10000000000` (or chunked when `chunked`, as one chunk) and
 * `first` bytes of body, then reads the answer without sending more (a client that reads while it
 * sends): its status line and its body's JSON.
 */
export function answerWhileSending(port: number, head: string, first = 64 * 1024, chunked = false): Promise<{ status: string; body: any }> {
  return new Promise((resolve, reject) => {
    const sock = net.connect({ port, host: '127.0.0.1' })
    let answer = ''
    const done = (): boolean => {
      const end = answer.indexOf('\r\n\r\n')
      if (end < 0) return false
      const len = /\r\ncontent-length: *(\d+)/i.exec(answer.slice(0, end))
      if (!len || answer.length < end + 4 + Number(len[1])) return false
      sock.destroy()
      resolve({ status: answer.split('\r\n')[0], body: JSON.parse(answer.slice(end + 4, end + 4 + Number(len[1]))) })
      return true
    }
    sock.on('data', (d) => {
      answer += d.toString('latin1')
      done()
    })
    sock.on('error', (err) => reject(err))
    sock.on('close', () => {
      if (!done()) reject(new Error(`closed without a whole answer: ${JSON.stringify(answer.slice(0, 200))}`))
    })
    sock.write(`${head}${chunked ? 'Transfer-Encoding: chunked' : 'Content-Length: 10000000000'}\r\n\r\n`)
    if (chunked) sock.write(`${first.toString(16)}\r\n`)
    sock.write(Buffer.alloc(first, 'a'))
  })
}

/**
 * Sends two requests on one connection, each with a body of `size` bytes sent whole, the second
 * once the first is answered: the status lines of both answers ('closed' when the connection was).
 */
export function twoOnOneConnection(port: number, head: string, size: number): Promise<string[]> {
  return new Promise((resolve) => {
    const sock = net.connect({ port, host: '127.0.0.1' })
    const statuses: string[] = []
    let answer = ''
    const send = (): void => {
      sock.write(`${head}Content-Length: ${size}\r\n\r\n`)
      sock.write(Buffer.alloc(size, 'a'))
    }
    sock.on('data', (d) => {
      answer += d.toString('latin1')
      const end = answer.indexOf('\r\n\r\n')
      if (end < 0) return
      const len = Number(/\r\ncontent-length: *(\d+)/i.exec(answer.slice(0, end))?.[1] ?? 0)
      if (answer.length < end + 4 + len) return
      statuses.push(answer.split('\r\n')[0])
      answer = answer.slice(end + 4 + len)
      if (statuses.length === 2) {
        sock.destroy()
        resolve(statuses)
      } else send()
    })
    sock.on('error', () => {})
    sock.on('close', () => {
      while (statuses.length < 2) statuses.push('closed')
      resolve(statuses)
    })
    send()
  })
}
