import { describe, expect, it } from 'vitest'
import { recorded } from '../providers/ledger'
import { serverOverMockUpstream } from '../support/server'
import { cutStreams, PIECES, sse } from './cut-stream'

/**
 * A Claude stream cut after `message_start` but before its final `message_delta`: its prompt
 * counts are the answer's, its output estimated from what streamed. When that `message_start`'s
 * usage does not say which speed served the call (no `speed`), the call is estimated at the
 * speed its request asked for, as one cut before `message_start` is
 * (./cut-before-start-fast.test.ts): a request with `speed: "fast"` is marked `"fast": true` and
 * priced at the fast price (builds before this one took it for standard speed). One whose
 * `message_start` says `speed: "standard"` stays at the standard price. Real HTTP on 127.0.0.1,
 * the mock upstream resetting the connection mid-stream, the real SQLite ledger.
 */

const MODEL = 'claude-opus-4-6'
const s = serverOverMockUpstream()
const { post, streamsThenResets } = cutStreams(s)
const KEY = { 'x-api-key': 'sk-ant-estimate-fast-cut-after-0000000001', 'anthropic-beta': 'fast-mode-2026-02-01' }
/** Opus 4.6: $5 / $25 per MTok standard, fast mode 6x ($30 / $150). */
const opus = (row: any, fast: boolean) => ((row.input_tokens * 5 + row.output_tokens * 25) / 1e6) * (fast ? 6 : 1)

function startThenText(usage: object): Buffer[] {
  return [
    sse({ type: 'message_start', message: { id: 'msg_cut_after_fast', type: 'message', role: 'assistant', model: MODEL, content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 3_000, output_tokens: 1, ...usage } } }, 'message_start'),
    sse({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }, 'content_block_start'),
    ...PIECES.map((text) => sse({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text } }, 'content_block_delta')),
  ]
}

const body = { model: MODEL, max_tokens: 4096, stream: true, speed: 'fast', messages: [{ role: 'user', content: 'Tell me a long story.' }] }

describe('an Anthropic stream that asked for fast mode, cut after message_start', () => {
  it('whose message_start does not say the speed is estimated at the fast price, marked fast', async () => {
    streamsThenResets(startThenText({}))
    const row = await recorded(s.t, () => post('/anthropic/v1/messages', body, KEY))
    expect(row).toMatchObject({ provider: 'anthropic', model: MODEL, input_tokens: 3_000, estimated: 1, priced: 1 })
    expect(row.output_tokens).toBeGreaterThan(1000)
    expect({ cost: row.cost_usd, extra: row.usage_extra }, `standard would be ${opus(row, false)}`).toEqual({ cost: expect.closeTo(opus(row, true), 12), extra: expect.stringContaining('"fast":true') })
  })

  it('whose message_start says standard speed stays at the standard price', async () => {
    streamsThenResets(startThenText({ speed: 'standard' }))
    const row = await recorded(s.t, () => post('/anthropic/v1/messages', body, KEY))
    expect(row).toMatchObject({ provider: 'anthropic', estimated: 1, priced: 1, usage_extra: null })
    expect(row.cost_usd).toBeCloseTo(opus(row, false), 12)
  })
})
