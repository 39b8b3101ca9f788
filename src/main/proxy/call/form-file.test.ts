import { describe, expect, it } from 'vitest'
import { formFile } from './form-file'

const field = (b: string, name: string, value: string) => Buffer.from(`--${b}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`)
const filePart = (b: string) => Buffer.from(`--${b}\r\nContent-Disposition: form-data; name="file"; filename="a.wav"\r\nContent-Type: audio/wav\r\n\r\n`)

describe("a multipart form's uploaded file (the audio a transcription's length is read from)", () => {
  it('a view of the file part, whether the fields come before or after it', () => {
    const audio = Buffer.from('RIFF\u0000\u0001 name="model"\r\n\r\nnot a field', 'latin1')
    const first = Buffer.concat([filePart('xYz'), audio, Buffer.from('\r\n'), field('xYz', 'model', 'whisper-1'), Buffer.from('--xYz--\r\n')])
    const file = formFile(first, 'multipart/form-data; boundary=xYz')!
    expect(file.equals(audio)).toBe(true)
    expect(file.buffer).toBe(first.buffer) // not a copy
    const last = Buffer.concat([field('q', 'model', 'whisper-1'), filePart('q'), audio, Buffer.from('\r\n--q--\r\n')])
    expect(formFile(last, 'multipart/form-data; boundary="q"')!.equals(audio)).toBe(true)
  })

  it('a file larger than both windows searched, ending at the first delimiter of the last one', () => {
    const audio = Buffer.alloc(3 * 1024 * 1024, 0x61)
    const body = Buffer.concat([field('b2', 'language', 'en'), filePart('b2'), audio, Buffer.from('\r\n'), field('b2', 'model', 'whisper-large-v3'), field('b2', 'response_format', 'text'), Buffer.from('--b2--\r\n')])
    expect(formFile(body, 'multipart/form-data; boundary=b2')!.equals(audio)).toBe(true)
  })

  it('undefined without a boundary, without a file part, or with a file part cut short', () => {
    const body = Buffer.concat([field('b1', 'model', 'whisper-1'), Buffer.from('--b1--\r\n')])
    expect(formFile(body, 'multipart/form-data; boundary=b1')).toBeUndefined()
    expect(formFile(body, 'multipart/form-data')).toBeUndefined()
    expect(formFile(Buffer.concat([filePart('b1'), Buffer.from('RIFF')]), 'multipart/form-data; boundary=b1')).toBeUndefined()
  })
})
