import { isObject } from './usage'

/**
 * The prompt tokens of an image, for estimates (./estimate.ts). Providers bill an image by its
 * size in pixels, never by its bytes, so its base64 is not text to count: its width and height
 * are read from the first bytes of its data (PNG, JPEG, GIF, WebP), and the provider's rule is
 * applied. An image given by URL or file id, or whose size cannot be read, is taken as
 * `DEFAULT_SIDE` square.
 */

/** An image in a prompt: its size in pixels (0 when unknown), and whether it asks for low detail (OpenAI's `detail: "low"`). */
export interface PromptImage {
  width: number
  height: number
  low: boolean
}

/** The side of an image whose size is not known (a URL, a file id): a typical screenshot, scaled. */
export const DEFAULT_SIDE = 1024
/** Base64 characters decoded at most to find a JPEG's size (its frame header follows its EXIF, thumbnail included). */
const JPEG_HEAD_CHARS = 128 * 1024

/**
 * The image a content block, part or item is, in any provider's request format, or undefined.
 * Without `read`, its size is not read from its data (taken as unknown).
 */
export function imageOf(part: Record<string, unknown>, read = true): PromptImage | undefined {
  const low = part.detail === 'low'
  const sized = (base64: string, low: boolean): PromptImage => {
    const size = read && base64 ? imageSize(base64) : undefined
    return { width: size?.width ?? 0, height: size?.height ?? 0, low }
  }
  // Anthropic: {type: 'image', source: {type: 'base64', data} | {type: 'url'} | {type: 'file'}}.
  if (part.type === 'image' && isObject(part.source)) return sized(typeof part.source.data === 'string' ? part.source.data : '', false)
  // Chat Completions: {type: 'image_url', image_url: {url, detail} | url}.
  if (part.type === 'image_url') {
    const iu = part.image_url
    if (typeof iu === 'string') return sized(dataOf(iu), false)
    if (isObject(iu)) return sized(typeof iu.url === 'string' ? dataOf(iu.url) : '', iu.detail === 'low')
    return undefined
  }
  // Responses: {type: 'input_image', image_url | file_id, detail}; a computer call's screenshot.
  if (part.type === 'input_image' || part.type === 'computer_screenshot') return sized(typeof part.image_url === 'string' ? dataOf(part.image_url) : '', low)
  // Gemini: {inlineData: {mimeType, data}}, {fileData: {mimeType, fileUri}}, images only.
  for (const d of [part.inlineData, part.inline_data, part.fileData, part.file_data]) {
    if (!isObject(d)) continue
    const mime = d.mimeType ?? d.mime_type
    if (typeof mime !== 'string' || !mime.startsWith('image/')) return undefined
    return sized(typeof d.data === 'string' ? d.data : '', false)
  }
  // Bedrock Converse: {image: {format, source: {bytes} | {s3Location}}}.
  if (isObject(part.image) && isObject(part.image.source)) return sized(typeof part.image.source.bytes === 'string' ? part.image.source.bytes : '', false)
  return undefined
}

function dataOf(url: string): string {
  if (!url.startsWith('data:')) return ''
  const comma = url.indexOf(',')
  return comma > 0 && url.lastIndexOf(';base64', comma) > 0 ? url.slice(comma + 1, comma + 1 + JPEG_HEAD_CHARS) : ''
}

/**
 * The width and height of a base64 image (PNG, JPEG, GIF, WebP) from its first bytes (for a
 * JPEG, at most `JPEG_HEAD_CHARS` characters decoded), or undefined.
 */
export function imageSize(base64: string): { width: number; height: number } | undefined {
  let b = Buffer.from(base64.slice(0, 64), 'base64')
  if (b.length < 26) return undefined
  // PNG: IHDR, the first chunk.
  if (b.readUInt32BE(0) === 0x89504e47) return nonZero(b.readUInt32BE(16), b.readUInt32BE(20))
  // GIF: the logical screen's size.
  if (b.toString('latin1', 0, 3) === 'GIF') return nonZero(b.readUInt16LE(6), b.readUInt16LE(8))
  if (b.toString('latin1', 0, 4) === 'RIFF' && b.toString('latin1', 8, 12) === 'WEBP' && b.length >= 30) {
    const kind = b.toString('latin1', 12, 16)
    if (kind === 'VP8 ') return nonZero(b.readUInt16LE(26) & 0x3fff, b.readUInt16LE(28) & 0x3fff)
    if (kind === 'VP8L') return nonZero(1 + (((b[22] & 0x3f) << 8) | b[21]), 1 + (((b[24] & 0xf) << 10) | (b[23] << 2) | ((b[22] & 0xc0) >> 6)))
    if (kind === 'VP8X') return nonZero(1 + b.readUIntLE(24, 3), 1 + b.readUIntLE(27, 3))
    return undefined
  }
  if (b[0] !== 0xff || b[1] !== 0xd8) return undefined
  // JPEG: the segments up to its frame header (SOF0 to SOF15 but DHT, JPG and DAC).
  b = Buffer.from(base64.slice(0, JPEG_HEAD_CHARS - (JPEG_HEAD_CHARS % 4)), 'base64')
  let at = 2
  while (at + 9 <= b.length) {
    if (b[at] !== 0xff) return undefined
    const marker = b[at + 1]
    if (marker === 0xff) {
      at++
      continue
    }
    if (marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc) return nonZero(b.readUInt16BE(at + 7), b.readUInt16BE(at + 5))
    if (marker === 0xda || marker === 0xd9) return undefined
    at += 2 + b.readUInt16BE(at + 2)
  }
  return undefined
}

function nonZero(width: number, height: number): { width: number; height: number } | undefined {
  return width > 0 && height > 0 ? { width, height } : undefined
}

/** Scales `w` × `h` down (never up) so that its sides fit `maxW` × `maxH`. */
function fit(w: number, h: number, maxW: number, maxH: number): [number, number] {
  const r = Math.min(1, maxW / w, maxH / h)
  return [w * r, h * r]
}

/**
 * An image's prompt tokens on `model`: Claude's (width × height) / 750 after scaling to 1568 px on
 * the long edge, at most 1,600 (Anthropic's vision docs); OpenAI's tile rule, 85 + 170 per 512-px
 * tile after fitting 2048 px and scaling the short side to 768 px, 85 at low detail (GPT-4o mini:
 * 2,833 + 5,667, the same dollars as GPT-4o's); Gemini's 258 for an image of at most 384 px, else
 * 258 per tile, after scaling to fit 3,072 × 3,072 (Vertex AI's image requirements: "larger images
 * are scaled down ... to fit a maximum resolution of 3072 x 3072"; unscaled, a photo of 6000 × 4000
 * counted 48 tiles, and a header declaring 2e9 × 2e9 pixels 1.7e15 tokens). Other models as Claude's.
 */
export function imageTokens(model: string, img: PromptImage): number {
  const name = model.replace(/^.*\//, '').toLowerCase()
  let [w, h] = img.width > 0 && img.height > 0 ? [img.width, img.height] : [DEFAULT_SIDE, DEFAULT_SIDE]
  if (/^(gpt-4o|gpt-4\.1|gpt-4\.5|gpt-4-turbo|gpt-5|o\d|chatgpt-4o|codex|computer-use)/.test(name)) {
    const [base, tile] = name.startsWith('gpt-4o-mini') ? [2833, 5667] : [85, 170]
    if (img.low) return base
    ;[w, h] = fit(w, h, 2048, 2048)
    const short = Math.min(w, h)
    if (short > 768) [w, h] = [(w * 768) / short, (h * 768) / short]
    return base + tile * Math.ceil(w / 512) * Math.ceil(h / 512)
  }
  if (name.includes('gemini')) {
    ;[w, h] = fit(w, h, 3072, 3072)
    if (w <= 384 && h <= 384) return 258
    const unit = Math.min(768, Math.max(256, Math.floor(Math.min(w, h) / 1.5)))
    return 258 * Math.ceil(w / unit) * Math.ceil(h / unit)
  }
  const long = Math.max(w, h)
  if (long > 1568) [w, h] = [(w * 1568) / long, (h * 1568) / long]
  return Math.min(1600, Math.ceil((w * h) / 750))
}
