import http from 'node:http'
import type { AddressInfo } from 'node:net'
import zlib from 'node:zlib'

export interface RecordedRequest {
  method: string
  url: string
  headers: http.IncomingHttpHeaders
  body: Buffer
}

/** What the mock answers: a status, headers and a body sent whole or in timed chunks. */
export interface Reply {
  status?: number
  headers?: Record<string, string>
  /** The body, sent at once. */
  body?: Buffer | string
  /** Or the body in chunks, with `delayMs` between them. */
  chunks?: Buffer[]
  delayMs?: number
  /** Compress the body with this encoding (and say so in Content-Encoding). */
  encoding?: 'gzip' | 'br' | 'deflate'
  /** Wait this long before sending headers. */
  headerDelayMs?: number
  /** Destroy the socket after this many chunks (a reset mid-stream). */
  resetAfterChunks?: number
  /** Send headers and these chunks, then go silent (a stall). */
  stallAfterChunks?: number
  /** Send headers and these chunks, then wait for `release` before the rest (an answer still streaming). */
  holdAfterChunks?: number
  release?: Promise<void>
}

export type Responder = (req: RecordedRequest) => Reply | Promise<Reply>

export interface MockUpstream {
  url: string
  requests: RecordedRequest[]
  /** Times (performance.now()) at which each chunk of the latest response was written. */
  chunkTimes: number[]
  /**
   * How each response the mock stopped writing ended, in order: `sent` (its whole body), `gone` (its
   * client had gone before a chunk, the rest not written), `reset` (resetAfterChunks). One that
   * stalls or is still being written has none yet: a test waits for it to know the mock is done.
   */
  endings: ('sent' | 'gone' | 'reset')[]
  setResponder(r: Responder): void
  /** The responder answering now (setResponder's last, or the one it started with). */
  responder(): Responder
  close(): Promise<void>
}

/** A provider stand-in on 127.0.0.1 that replays recorded bodies byte for byte. */
export async function startMockUpstream(responder: Responder = () => ({ status: 200, body: '{}' })): Promise<MockUpstream> {
  let respond = responder
  const requests: RecordedRequest[] = []
  const chunkTimes: number[] = []
  const endings: MockUpstream['endings'] = []
  const server = http.createServer(async (req, res) => {
    const parts: Buffer[] = []
    for await (const c of req) parts.push(c as Buffer)
    const rec: RecordedRequest = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: Buffer.concat(parts) }
    requests.push(rec)
    const reply = await respond(rec)
    if (reply.headerDelayMs) await sleep(reply.headerDelayMs)
    const headers: Record<string, string> = { ...reply.headers }
    let chunks = reply.chunks ?? [Buffer.from(reply.body ?? '')]
    if (reply.encoding) {
      const whole = Buffer.concat(chunks)
      const packed =
        reply.encoding === 'gzip' ? zlib.gzipSync(whole) : reply.encoding === 'br' ? zlib.brotliCompressSync(whole) : zlib.deflateSync(whole)
      headers['content-encoding'] = reply.encoding
      chunks = reply.chunks ? splitEvenly(packed, chunks.length) : [packed]
    }
    if (!reply.chunks) headers['content-length'] = String(chunks[0].length)
    res.writeHead(reply.status ?? 200, headers)
    res.flushHeaders()
    chunkTimes.length = 0
    for (let i = 0; i < chunks.length; i++) {
      if (reply.resetAfterChunks !== undefined && i >= reply.resetAfterChunks) {
        req.socket.destroy()
        return void endings.push('reset')
      }
      if (reply.stallAfterChunks !== undefined && i >= reply.stallAfterChunks) return
      if (i === reply.holdAfterChunks) await reply.release
      if (i > 0 && reply.delayMs) await sleep(reply.delayMs)
      if (res.destroyed) return void endings.push('gone')
      res.write(chunks[i])
      chunkTimes.push(performance.now())
    }
    res.end()
    endings.push('sent')
  })
  server.keepAliveTimeout = 1000
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    chunkTimes,
    endings,
    setResponder: (r) => {
      respond = r
    },
    responder: () => respond,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections()
        server.close(() => r())
      }),
  }
}

function splitEvenly(buf: Buffer, n: number): Buffer[] {
  const size = Math.max(1, Math.ceil(buf.length / n))
  const out: Buffer[] = []
  for (let i = 0; i < buf.length; i += size) out.push(buf.subarray(i, i + size))
  return out
}

/** A Chat Completions answer of `promptTokens` input tokens and no output (a call whose cost a price override sets exactly). */
export function chatPromptAnswer(promptTokens: number): Responder {
  return () => ({
    status: 200,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      id: 'chatcmpl-1', object: 'chat.completion', created: 1, model: 'gpt-4o-mini',
      choices: [{ index: 0, message: { role: 'assistant', content: 'hi' }, finish_reason: 'stop' }],
      usage: { prompt_tokens: promptTokens, completion_tokens: 0, total_tokens: promptTokens },
    }),
  })
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms))
}
