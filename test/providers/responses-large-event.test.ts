import { describe, expect, it } from 'vitest'
import { eventually, request } from '../support/http'
import { ledgerRows } from '../support/ledger-rows'
import { serverOverMockUpstream } from '../support/server'

/**
 * A Responses stream's terminal event repeats every output item: one that ran the
 * `image_generation` tool four times carries each image's base64 again, 17 MB in one event. Its
 * usage is read as any other's. Before, the stream meter dropped any line over 16 MB, and the
 * call was estimated from its request: 19 tokens and no output, for a call that cost a cent.
 */

const s = serverOverMockUpstream()

function stream(imageBytes: number): Buffer {
  const ev = (type: string, data: object) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`
  const resp = { id: 'resp_big_1', object: 'response', model: 'gpt-5-2025-08-07', status: 'in_progress', usage: null, output: [] as any[] }
  // Each item names what was made, as OpenAI's do (a medium square image: 1,056 output image tokens of gpt-image-1).
  const images = [0, 1, 2, 3].map((i) => ({ type: 'image_generation_call', id: `ig_${i}`, status: 'completed', quality: 'medium', size: '1024x1024', result: 'A'.repeat(imageBytes) }))
  const usage = { input_tokens: 1200, input_tokens_details: { cached_tokens: 0 }, output_tokens: 900, output_tokens_details: { reasoning_tokens: 600 }, total_tokens: 2100 }
  return Buffer.from(ev('response.created', { response: resp }) + ev('response.completed', { response: { ...resp, status: 'completed', output: images, usage } }))
}

describe('a very large terminal event', () => {
  for (const [name, size] of [['1 MB images', 1_000_000], ['4.3 MB images: a 17 MB event', 4_300_000]] as const) {
    it(`response.completed with four ${name}: its usage is recorded, not estimated`, async () => {
      const body = stream(size)
      const parts: Buffer[] = []
      for (let i = 0; i < body.length; i += 64 * 1024) parts.push(body.subarray(i, i + 64 * 1024))
      s.upstream.setResponder(() => ({ status: 200, headers: { 'content-type': 'text/event-stream' }, chunks: parts }))
      const before = ledgerRows(s.t.dbFile).length
      const res = await request(`${s.t.url}/openai/v1/responses`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: 'Bearer sk-test-large-event-0001' },
        body: JSON.stringify({ model: 'gpt-5', stream: true, input: 'draw 4 cats', tools: [{ type: 'image_generation' }] }),
      })
      expect(res.body.equals(body)).toBe(true)
      const row = await eventually(() => {
        const r = ledgerRows(s.t.dbFile)
        return r.length > before ? r[r.length - 1] : undefined
      })
      expect([row.input_tokens, row.output_tokens, row.reasoning_tokens, row.estimated]).toEqual([1200, 900, 600, 0])
      // ...and the four images, which that usage does not count, are billed on top of it.
      expect(JSON.parse(row.usage_extra)).toEqual({ tool_images: { 'gpt-image-1': 4 * 1056 } })
    }, 60_000)
  }
})
