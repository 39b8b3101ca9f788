import { describe, expect, it } from 'vitest'
import { formFields, parseJsonBody } from './request-body'

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
