import { deflateSync } from 'node:zlib'
import { describe, expect, it } from 'vitest'
import { serverOverMockUpstream } from '../support/server'
import { recorded } from '../providers/ledger'
import { cutStreams } from './cut-stream'

/**
 * Images in the prompt of a stream cut before its usage, through a real server, real HTTP and the
 * real SQLite ledger. Each provider bills an image by its size in pixels, not by its bytes:
 * Anthropic (width × height) / 750 tokens, at most ~1,600 (docs: build-with-claude/vision);
 * OpenAI's tile rule, 85 + 170 per 512-px tile after scaling to 768 px on the short side
 * (images-vision guide, "Calculating costs"); Gemini 258 per image of at most 384 px, else 258
 * per tile. An image was counted as nothing; its base64 must not be counted as text either.
 */

const s = serverOverMockUpstream()
const { streamsThenResets, post } = cutStreams(s)

/** A real PNG of `w` × `h` pixels (one grey colour; its IDAT of incompressible noise makes it `noise` bytes longer). */
function png(w: number, h: number, noise = 0): string {
  const chunk = (type: string, data: Buffer) => {
    const len = Buffer.alloc(4)
    len.writeUInt32BE(data.length)
    return Buffer.concat([len, Buffer.from(type, 'latin1'), data, Buffer.alloc(4)])
  }
  const ihdr = Buffer.alloc(13)
  ihdr.writeUInt32BE(w, 0)
  ihdr.writeUInt32BE(h, 4)
  ihdr[8] = 8
  ihdr[9] = 0
  const raw = Buffer.alloc((w + 1) * h, 0x80)
  const noiseBytes = Buffer.alloc(noise)
  for (let i = 0; i < noise; i++) noiseBytes[i] = (i * 2654435761) >>> 24
  return Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), chunk('IHDR', ihdr), chunk('IDAT', deflateSync(raw)), chunk('tEXt', noiseBytes), chunk('IEND', Buffer.alloc(0))]).toString('base64')
}

describe('Anthropic: a cut stream whose prompt is a screenshot', () => {
  const KEY = { 'x-api-key': 'sk-ant-estimate-images-00000000001' }
  const ask = (content: unknown[]) => post('/anthropic/v1/messages', { model: 'claude-sonnet-4-5', max_tokens: 1024, stream: true, messages: [{ role: 'user', content }] }, KEY)

  it('a 1000 × 1000 image is ~1,334 tokens of prompt', async () => {
    streamsThenResets([])
    const row = await recorded(s.t, () => ask([{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: png(1000, 1000) } }, { type: 'text', text: 'What is this?' }]))
    expect(row.estimated).toBe(1)
    expect(row.input_tokens).toBeGreaterThan(1334)
    expect(row.input_tokens).toBeLessThan(1334 + 40)
  })

  it('a large image is capped as Anthropic scales it (~1,600), never counted by its base64 length', async () => {
    streamsThenResets([])
    const row = await recorded(s.t, () => ask([{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: png(3000, 2000, 600_000) } }, { type: 'text', text: 'What is this?' }]))
    expect(row.estimated).toBe(1)
    expect(row.input_tokens).toBeGreaterThan(1400)
    expect(row.input_tokens).toBeLessThan(1700)
  })

  it('an image in a tool result (a screenshot tool) counts too', async () => {
    streamsThenResets([])
    const messages = [
      { role: 'user', content: 'Take a screenshot.' },
      { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'screenshot', input: {} }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: png(1000, 1000) } }] }] },
    ]
    const row = await recorded(s.t, () => post('/anthropic/v1/messages', { model: 'claude-sonnet-4-5', max_tokens: 1024, stream: true, messages }, KEY))
    expect(row.estimated).toBe(1)
    expect(row.input_tokens).toBeGreaterThan(1334)
  })
})

describe('OpenAI: a cut stream whose prompt has an image', () => {
  const KEY = { authorization: 'Bearer sk-proj-estimate-images-000000001' }

  it('Chat Completions: a 1024 × 1024 data-URL image at high detail is 765 tokens', async () => {
    streamsThenResets([])
    const content = [{ type: 'text', text: 'What is this?' }, { type: 'image_url', image_url: { url: `data:image/png;base64,${png(1024, 1024)}`, detail: 'high' } }]
    const row = await recorded(s.t, () => post('/openai/v1/chat/completions', { model: 'gpt-4o', stream: true, messages: [{ role: 'user', content }] }, KEY))
    expect(row.estimated).toBe(1)
    expect(row.input_tokens).toBeGreaterThan(765)
    expect(row.input_tokens).toBeLessThan(765 + 30)
  })

  it('Chat Completions: at low detail it is 85 tokens', async () => {
    streamsThenResets([])
    const content = [{ type: 'image_url', image_url: { url: `data:image/png;base64,${png(1024, 1024)}`, detail: 'low' } }]
    const row = await recorded(s.t, () => post('/openai/v1/chat/completions', { model: 'gpt-4o', stream: true, messages: [{ role: 'user', content }] }, KEY))
    expect(row.input_tokens).toBeGreaterThanOrEqual(85)
    expect(row.input_tokens).toBeLessThan(85 + 20)
  })

  it('Responses: an input_image counts', async () => {
    streamsThenResets([])
    const input = [{ role: 'user', content: [{ type: 'input_text', text: 'What is this?' }, { type: 'input_image', image_url: `data:image/png;base64,${png(1024, 1024)}`, detail: 'high' }] }]
    const row = await recorded(s.t, () => post('/openai/v1/responses', { model: 'gpt-4o', stream: true, input }, KEY))
    expect(row.estimated).toBe(1)
    expect(row.input_tokens).toBeGreaterThan(765)
  })
})

describe('Gemini: a cut stream whose prompt has an inline image', () => {
  it('a 384 × 384 image is 258 tokens', async () => {
    streamsThenResets([])
    const body = { contents: [{ role: 'user', parts: [{ inlineData: { mimeType: 'image/png', data: png(384, 384) } }, { text: 'What is this?' }] }] }
    const row = await recorded(s.t, () => post('/gemini/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse', body, { 'x-goog-api-key': 'AIzaSy-estimate-images-0000000000001' }))
    expect(row.estimated).toBe(1)
    expect(row.input_tokens).toBeGreaterThanOrEqual(258)
    expect(row.input_tokens).toBeLessThan(258 + 20)
  })
})

describe('Gemini: a large image is counted as Gemini scales it (to fit 3,072 × 3,072), not by its own size', () => {
  /** The first bytes of a PNG of `w` × `h` pixels: all the estimate reads of it. */
  const pngHead = (w: number, h: number) => {
    const ihdr = Buffer.alloc(25)
    ihdr.writeUInt32BE(13, 0)
    ihdr.write('IHDR', 4, 'latin1')
    ihdr.writeUInt32BE(w, 8)
    ihdr.writeUInt32BE(h, 12)
    ihdr[16] = 8
    return Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), ihdr, Buffer.from([0, 0, 0, 0, 0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82])]).toString('base64')
  }
  const ask = (data: string) =>
    recorded(s.t, () =>
      post(
        '/gemini/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse',
        { contents: [{ role: 'user', parts: [{ inlineData: { mimeType: 'image/png', data } }, { text: 'What is this?' }] }] },
        { 'x-goog-api-key': 'AIzaSy-estimate-images-0000000000002' },
      ),
    )

  it('a 6000 × 4000 photo is 3072 × 2048 once scaled: 12 tiles of 258 (3,096), not 48', async () => {
    streamsThenResets([])
    const row = await ask(pngHead(6000, 4000))
    expect(row.estimated).toBe(1)
    expect(row.input_tokens).toBeGreaterThanOrEqual(3096)
    expect(row.input_tokens).toBeLessThan(3096 + 20)
  })

  it('an image declaring an absurd size is at most 16 tiles, never billions of tokens', async () => {
    streamsThenResets([])
    const row = await ask(pngHead(2_000_000_000, 2_000_000_000))
    expect(row.estimated).toBe(1)
    expect(row.input_tokens).toBeLessThan(16 * 258 + 20)
  })
})
