import { describe, expect, it } from 'vitest'
import { DEFAULT_SIDE, imageOf, imageSize, imageTokens } from './image-tokens'

const b64 = (bytes: number[] | Buffer) => Buffer.from(bytes as number[]).toString('base64')

describe('imageSize reads the size in pixels from the first bytes', () => {
  it('JPEG: the frame header after an APP1 segment', () => {
    const app1 = [0xff, 0xe1, 0x00, 0x10, ...new Array(14).fill(0x41)]
    const sof0 = [0xff, 0xc0, 0x00, 0x11, 0x08, 0x02, 0xd0, 0x05, 0x00, 0x03, ...new Array(9).fill(0)]
    expect(imageSize(b64([0xff, 0xd8, ...app1, ...sof0, 0xff, 0xda]))).toEqual({ width: 1280, height: 720 })
  })

  it('GIF and the three kinds of WebP', () => {
    expect(imageSize(b64([...Buffer.from('GIF89a'), 0x40, 0x01, 0xf0, 0x00, ...new Array(20).fill(0)]))).toEqual({ width: 320, height: 240 })
    const riff = (kind: string, rest: number[]) => [...Buffer.from('RIFF'), 0, 0, 0, 0, ...Buffer.from('WEBP'), ...Buffer.from(kind), ...rest]
    // VP8X: canvas width-1 and height-1, 24 bits each, at 24 and 27.
    expect(imageSize(b64(riff('VP8X', [10, 0, 0, 0, 0, 0, 0, 0, 0x7f, 0x07, 0x00, 0x37, 0x04, 0x00, 0, 0])))).toEqual({ width: 1920, height: 1080 })
    // VP8: width and height (14 bits) at 26 and 28.
    expect(imageSize(b64(riff('VP8 ', [0, 0, 0, 0, 0, 0, 0, 0x9d, 0x01, 0x2a, 0x80, 0x02, 0xe0, 0x01, 0, 0])))).toEqual({ width: 640, height: 480 })
    // VP8L: 14-bit width-1 and height-1 packed after the signature byte 0x2f.
    const w = 99, h = 49
    const bits = w | (h << 14)
    expect(imageSize(b64(riff('VP8L', [0, 0, 0, 0, 0x2f, bits & 0xff, (bits >> 8) & 0xff, (bits >> 16) & 0xff, (bits >> 24) & 0xff, 0, 0, 0, 0, 0, 0])))).toEqual({ width: 100, height: 50 })
  })

  it('not an image: undefined', () => {
    expect(imageSize(b64(Buffer.from('hello, this is not an image at all, just text')))).toBeUndefined()
  })
})

describe('imageTokens', () => {
  it("applies each provider's rule; an image of unknown size is taken as a typical one", () => {
    expect(imageTokens('claude-sonnet-4-5', { width: 1000, height: 1000, low: false })).toBe(1334)
    expect(imageTokens('gpt-4o', { width: 2048, height: 4096, low: false })).toBe(1105)
    expect(imageTokens('gpt-4o', { width: 2048, height: 4096, low: true })).toBe(85)
    expect(imageTokens('gemini-2.5-pro', { width: 300, height: 300, low: false })).toBe(258)
    const unknown = imageOf({ type: 'image_url', image_url: { url: 'https://example.com/a.png' } })!
    expect(unknown).toEqual({ width: 0, height: 0, low: false })
    expect(imageTokens('gpt-4o', unknown)).toBe(imageTokens('gpt-4o', { width: DEFAULT_SIDE, height: DEFAULT_SIDE, low: false }))
  })
})
