import type { IncomingMessage } from 'node:http'
import { PassThrough, Writable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { describe, expect, it } from 'vitest'
import { PROVIDERS } from '../../providers/registry'
import { Router, buildUpstreams } from '../routes'
import { RequestStream, type StreamedBody, streamsBody } from './request-stream'

const router = new Router(buildUpstreams(PROVIDERS, {}))

/** A request as the server hands it on: its headers, and its body to come. */
function request(method: string, headers: Record<string, string>): IncomingMessage {
  return Object.assign(new PassThrough(), { method, headers }) as unknown as IncomingMessage
}

function streams(method: string, path: string, headers: Record<string, string>): boolean {
  const [p, q = ''] = path.split('?')
  return streamsBody(router.match(p, Object.fromEntries(new URLSearchParams(q)))!, request(method, headers))
}

describe('streamsBody: which bodies go upstream as they come', () => {
  const json = { 'content-type': 'application/json', 'content-length': '100' }
  const form = { 'content-type': 'multipart/form-data; boundary=b', 'content-length': '100' }
  it('a model call, and any other JSON body, is read whole', () => {
    expect(streams('POST', '/v1/chat/completions', json)).toBe(false)
    expect(streams('POST', '/anthropic/v1/messages', json)).toBe(false)
    expect(streams('POST', '/anthropic/v1/messages/count_tokens', json)).toBe(false)
    expect(streams('POST', '/v1/batches', json)).toBe(false)
    expect(streams('POST', '/v1/uploads', json)).toBe(false)
  })

  it("an Anthropic Message Batch's creation is streamed (its JSON is never read)", () => {
    expect(streams('POST', '/anthropic/v1/messages/batches', json)).toBe(true)
    expect(streams('POST', '/anthropic/v1/messages/batches/', { 'content-type': 'application/json', 'transfer-encoding': 'chunked' })).toBe(true)
  })

  it("file uploads are streamed; a billable call's form (a transcription's audio) is read whole", () => {
    expect(streams('POST', '/v1/files', form)).toBe(true)
    expect(streams('POST', '/v1/uploads/upload_1/parts', form)).toBe(true)
    expect(streams('POST', '/gemini/upload/v1beta/files', { 'content-type': 'application/octet-stream', 'content-length': '100' })).toBe(true)
    expect(streams('POST', '/v1/audio/transcriptions', form)).toBe(false)
    expect(streams('POST', '/v1/images/edits', form)).toBe(false)
  })

  it('a request with no body, or an empty one, has nothing to stream', () => {
    expect(streams('GET', '/v1/files', {})).toBe(false)
    expect(streams('POST', '/v1/files', { ...form, 'content-length': '0' })).toBe(false)
  })
})

/** Streams `body` through a RequestStream in `chunk`-byte pieces; what reached the far side, and what it said once it had passed. */
async function through(body: Buffer, contentType: string, chunk: number): Promise<{ out: Buffer; passed: StreamedBody }> {
  const req = request('POST', { 'content-type': contentType, 'content-length': String(body.length) })
  let passed: StreamedBody | undefined
  const s = new RequestStream(req, (b) => (passed = b))
  const parts: Buffer[] = []
  const sink = new Writable({
    highWaterMark: 16 * 1024,
    write(c: Buffer, _e, cb) {
      parts.push(c)
      setImmediate(cb)
    },
  })
  const done = pipeline(s, sink)
  const src = req as unknown as PassThrough
  for (let at = 0; at < body.length; at += chunk) if (!src.write(body.subarray(at, at + chunk))) await new Promise((r) => src.once('drain', r))
  src.end()
  await done
  return { out: Buffer.concat(parts), passed: passed! }
}

function form(file: Buffer, first: Record<string, string>, last: Record<string, string>): Buffer {
  const field = (k: string, v: string) => `--b\r\nContent-Disposition: form-data; name="${k}"\r\n\r\n${v}\r\n`
  return Buffer.concat([
    Buffer.from(Object.entries(first).map(([k, v]) => field(k, v)).join('')),
    Buffer.from('--b\r\nContent-Disposition: form-data; name="file"; filename="x.bin"\r\n\r\n'),
    file,
    Buffer.from('\r\n' + Object.entries(last).map(([k, v]) => field(k, v)).join('') + '--b--\r\n'),
  ])
}

describe('RequestStream', () => {
  it('passes the body on unchanged and gives its size and a form\'s fields from both ends, whatever the chunks', async () => {
    for (const size of [10, 100 * 1024, 1024 * 1024]) {
      const file = Buffer.alloc(size, 0x2d) // dashes: a file that looks like delimiters' beginnings
      const body = form(file, { purpose: 'batch' }, { model: 'sora-2', stream: 'true' })
      for (const chunk of [997, 64 * 1024, body.length]) {
        const { out, passed } = await through(body, 'multipart/form-data; boundary=b', chunk)
        expect(out.equals(body), `${size}/${chunk}`).toBe(true)
        expect(passed, `${size}/${chunk}`).toEqual({ bytes: body.length, fields: { purpose: 'batch', model: 'sora-2', stream: true } })
      }
    }
  })

  it('reads nothing of a body that is not a form', async () => {
    const body = Buffer.from('{"requests":[]}')
    const { out, passed } = await through(body, 'application/json', 4)
    expect(out.equals(body)).toBe(true)
    expect(passed).toEqual({ bytes: body.length, fields: undefined })
  })
})
