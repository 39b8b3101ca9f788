import http from 'node:http'
import type { AddressInfo } from 'node:net'
import zlib from 'node:zlib'
import { describe, expect, it } from 'vitest'
import { BodyMemory, BodyMemoryFull, decodeBody, formFields, parseJsonBody, readBody, readRequest } from './request-body'

const form = (boundary: string, parts: string[]) => Buffer.from(parts.map((p) => `--${boundary}\r\n${p}\r\n`).join('') + `--${boundary}--\r\n`, 'latin1')

describe('multipart form fields (OpenAI audio uploads name their model in one)', () => {
  it('keeps the text fields, skips file parts, reads stream as JSON would', () => {
    const body = form('xYz', [
      'Content-Disposition: form-data; name="file"; filename="a.wav"\r\nContent-Type: audio/wav\r\n\r\nRIFF\u0000\u0001name="model"\r\n\r\nfake',
      'Content-Disposition: form-data; name="model"\r\n\r\ngpt-4o-mini-transcribe',
      'Content-Disposition: form-data; name="stream"\r\n\r\ntrue',
      'Content-Disposition: form-data; name="prompt"\r\n\r\nline one\r\nline two',
    ])
    expect(parseJsonBody(body, 'multipart/form-data; boundary=xYz')).toEqual({ model: 'gpt-4o-mini-transcribe', stream: true, prompt: 'line one\r\nline two' })
    expect(formFields(body, 'multipart/form-data; boundary="xYz"')).toEqual({ model: 'gpt-4o-mini-transcribe', stream: true, prompt: 'line one\r\nline two' })
  })

  it('finds the fields before and after a large file without scanning it', () => {
    const big = Buffer.alloc(3 * 1024 * 1024, 0x61)
    const body = Buffer.concat([
      Buffer.from('--b2\r\nContent-Disposition: form-data; name="language"\r\n\r\nen\r\n'),
      Buffer.from('--b2\r\nContent-Disposition: form-data; name="file"; filename="x.mp3"\r\n\r\n'),
      big,
      Buffer.from('\r\n--b2\r\nContent-Disposition: form-data; name="model"\r\n\r\ngpt-4o-transcribe\r\n--b2--\r\n'),
    ])
    expect(formFields(body, 'multipart/form-data; boundary=b2')).toEqual({ language: 'en', model: 'gpt-4o-transcribe' })
  })

  it('undefined without a boundary, with a wrong one, or for a body that is not a form', () => {
    const body = form('b1', ['Content-Disposition: form-data; name="model"\r\n\r\nwhisper-1'])
    expect(parseJsonBody(body, 'multipart/form-data')).toBeUndefined()
    expect(parseJsonBody(body, 'multipart/form-data; boundary=other')).toBeUndefined()
    expect(parseJsonBody(Buffer.from('--b1\r\nno end'), 'multipart/form-data; boundary=b1')).toBeUndefined()
    expect(parseJsonBody(body, 'application/octet-stream')).toBeUndefined()
  })
})

describe('compressed request bodies (decodeBody, readRequest)', () => {
  const json = Buffer.from(JSON.stringify({ model: 'gpt-5', input: 'hi '.repeat(1000) }))

  it('decodes each encoding, and hands back a body without one as it is', async () => {
    for (const [encoding, packed] of [
      ['gzip', zlib.gzipSync(json)],
      ['deflate', zlib.deflateSync(json)],
      ['br', zlib.brotliCompressSync(json)],
      [' ZSTD ', zlib.zstdCompressSync(json)],
    ] as const) {
      expect((await decodeBody(packed, encoding, 1 << 20))?.equals(json)).toBe(true)
    }
    expect(await decodeBody(json, undefined, 1 << 20)).toBe(json)
    expect(await decodeBody(json, 'identity', 1 << 20)).toBe(json)
  })

  it('null for an encoding it does not know, a list, or a corrupt or truncated body', async () => {
    const gz = zlib.gzipSync(json)
    expect(await decodeBody(json, 'compress', 1 << 20)).toBeNull()
    expect(await decodeBody(gz, 'gzip, identity', 1 << 20)).toBeNull()
    expect(await decodeBody(json, 'zstd', 1 << 20)).toBeNull()
    expect(await decodeBody(gz.subarray(0, gz.length - 10), 'gzip', 1 << 20)).toBeNull()
  })

  it('stops a body that decompresses past the limit, and gives back the memory it took', async () => {
    const memory = new BodyMemory(1 << 30)
    const bomb = zlib.zstdCompressSync(Buffer.alloc(8 << 20))
    await expect(decodeBody(bomb, 'zstd', 1 << 20, memory)).rejects.toMatchObject({ decoded: true })
    expect(memory.held).toBe(0)
  })

  it('refuses a decoded copy the memory for bodies has no room for', async () => {
    const memory = new BodyMemory(1000)
    await expect(decodeBody(zlib.gzipSync(json), 'gzip', 1 << 20, memory)).rejects.toBeInstanceOf(BodyMemoryFull)
    expect(memory.held).toBe(0)
  })

  it('readRequest parses the decoded copy, counts its bytes, and gives its memory back once parsed', async () => {
    const memory = new BodyMemory(1 << 20)
    const r = await readRequest(zlib.zstdCompressSync(json), { 'content-type': 'application/json', 'content-encoding': 'zstd' }, 1 << 20, memory)
    expect(r).toEqual({ parsed: JSON.parse(json.toString()), bytes: json.length })
    expect(memory.held).toBe(0)
    expect(await readRequest(Buffer.from('x'), { 'content-type': 'application/json', 'content-encoding': 'zstd' }, 1 << 20, memory)).toEqual({ parsed: undefined, bytes: 1 })
  })
})

describe('readBody', () => {
  /** A real server on 127.0.0.1 that reads each request with readBody and answers its bytes and the memory it holds (or its error), then gives that back. */
  async function withServer<T>(fn: (port: number) => Promise<T>): Promise<T> {
    const memory = new BodyMemory(1024 * 1024)
    const server = http.createServer((req, res) => {
      readBody(req, 64 * 1024, memory).then(
        (b) => {
          const held = memory.held
          memory.give(b?.length ?? 0)
          res.end(JSON.stringify({ body: b === null ? null : b.toString('latin1'), held }))
        },
        (e: Error) => res.end(JSON.stringify({ error: e.constructor.name })),
      )
    })
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
    try {
      return await fn((server.address() as AddressInfo).port)
    } finally {
      server.close()
    }
  }

  function send(port: number, parts: string[], headers: Record<string, string>, method = 'POST'): Promise<{ body?: string | null; held?: number; error?: string }> {
    return new Promise((resolve, reject) => {
      const req = http.request({ host: '127.0.0.1', port, method, headers }, (res) => {
        let text = ''
        res.on('data', (c: Buffer) => (text += c.toString()))
        res.on('end', () => resolve(JSON.parse(text)))
      })
      req.on('error', reject)
      // Each part written on its own turn: they come as separate chunks (or, coalesced, fewer).
      let i = 0
      const next = (): void => {
        if (i === parts.length) {
          req.end()
          return
        }
        req.write(parts[i++])
        setImmediate(next)
      }
      next()
    })
  }

  it('gives the body whole however many chunks it came in, an empty one as empty, and none as null', async () => {
    await withServer(async (port) => {
      const parts = ['{"model":"a",', '"messages":[{"role":"user",', '"content":"' + 'x'.repeat(20_000) + '"}]}']
      const whole = parts.join('')
      expect(await send(port, parts, { 'transfer-encoding': 'chunked' })).toEqual({ body: whole, held: whole.length })
      expect(await send(port, [whole], { 'content-length': String(whole.length) })).toEqual({ body: whole, held: whole.length })
      expect(await send(port, [], { 'transfer-encoding': 'chunked' })).toEqual({ body: '', held: 0 })
      expect(await send(port, [], {}, 'GET')).toEqual({ body: null, held: 0 })
      expect(await send(port, ['y'.repeat(40_000), 'y'.repeat(40_000)], { 'transfer-encoding': 'chunked' })).toEqual({ error: 'BodyTooLarge' })
    })
  })
})
