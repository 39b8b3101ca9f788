import { describe, expect, it } from 'vitest'
import { serverOverMockUpstream } from '../support/server'
import { recorded } from '../providers/ledger'
import { fixture } from '../support/fixtures'
import { cutStreams } from './cut-stream'

/**
 * An Anthropic stream cut before `message_start` reported nothing of its bill: it is estimated
 * from its request. A request that asked for fast mode (`speed: "fast"`, with the
 * `fast-mode-2026-02-01` beta header) on a model whose fast price Anthropic publishes is
 * estimated at that price, marked `"fast": true`, as the answer's `usage.speed` would have said
 * (builds before this one priced it at the standard rate, a sixth of the bill for Opus 4.6).
 * Real HTTP on 127.0.0.1, the mock upstream replaying test/fixtures/anthropic cut before its
 * first event, the real SQLite ledger.
 */

const s = serverOverMockUpstream()
const { post } = cutStreams(s)
const KEY = { 'x-api-key': 'sk-ant-estimate-fast-cut-0000000001', 'anthropic-beta': 'fast-mode-2026-02-01' }
const PROMPT = 'Summarise the plot of a long novel in detail. '.repeat(200)
const body = (extra: object) => ({ model: 'claude-opus-4-6', max_tokens: 4096, stream: true, messages: [{ role: 'user', content: PROMPT }], ...extra })
/** Opus 4.6: $5 / $25 per MTok standard, fast mode 6x ($30 / $150). */
const opus = (row: any, fast: boolean) => ((row.input_tokens * 5 + row.output_tokens * 25) / 1e6) * (fast ? 6 : 1)

/** The recorded stream's headers arrive, then the connection is reset before its first event (message_start). */
function cutBeforeStart(): void {
  const recordedStream = fixture('anthropic/messages-stream-text.sse')
  s.upstream.setResponder(() => ({ status: 200, headers: { 'content-type': 'text/event-stream' }, chunks: [recordedStream], resetAfterChunks: 0, delayMs: 1 }))
}

describe('an Anthropic stream cut before message_start', () => {
  it('that asked for fast mode is estimated at the fast price, marked fast', async () => {
    cutBeforeStart()
    const row = await recorded(s.t, () => post('/anthropic/v1/messages', body({ speed: 'fast' }), KEY))
    expect(row).toMatchObject({ provider: 'anthropic', model: 'claude-opus-4-6', estimated: 1, priced: 1 })
    expect(row.input_tokens).toBeGreaterThan(1000)
    expect({ cost: row.cost_usd, extra: row.usage_extra }, `standard would be ${opus(row, false)}`).toEqual({ cost: expect.closeTo(opus(row, true), 12), extra: expect.stringContaining('"fast":true') })
  })

  it('that asked for the standard speed stays at the standard price', async () => {
    cutBeforeStart()
    const row = await recorded(s.t, () => post('/anthropic/v1/messages', body({ speed: 'standard' }), KEY))
    expect(row).toMatchObject({ provider: 'anthropic', estimated: 1, priced: 1, usage_extra: null })
    expect(row.cost_usd).toBeCloseTo(opus(row, false), 12)
  })
})
