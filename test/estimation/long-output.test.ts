import { describe, expect, it } from 'vitest'
import { estimateOutputTokens } from '../../src/main/metering/estimate'
import { OutputText } from '../../src/main/metering/output-text'
import { eventMessage } from '../support/event-stream'
import { postJson } from '../support/http'
import { serverOverMockUpstream } from '../support/server'
import { recorded } from '../providers/ledger'

/**
 * Outputs longer than the text a meter keeps for an estimate (OutputText.MAX_CHARS, 2M
 * characters), in streams that carry no usage. Degenerate output runs that long (a megabyte of
 * `=` is ~16k o200k tokens, so a 64k-token runaway is ~4 MB): only the first 2M characters are
 * kept, and the rest must be extrapolated at their rate, not dropped (which recorded 4.8M
 * characters of Chat Completions output as 333,334 tokens instead of ~800,000).
 */

const s = serverOverMockUpstream()

/** Past the bound: 'hello world ' x n, in pieces of 64 KB. */
function longText(chars: number): string {
  return 'hello world '.repeat(Math.ceil(chars / 12))
}

function pieces(text: string): string[] {
  const out: string[] = []
  for (let i = 0; i < text.length; i += 65_536) out.push(text.slice(i, i + 65_536))
  return out
}

function sse(events: object[]): Buffer[] {
  return events.map((e) => Buffer.from(`data: ${JSON.stringify(e)}\n\n`))
}

/** The whole output's estimate, counted as if nothing had been dropped. */
async function expectWholeCounted(row: any, model: string, text: string): Promise<void> {
  expect(row).toMatchObject({ status: 200, estimated: 1 })
  const whole = await estimateOutputTokens(model, text)
  const kept = await estimateOutputTokens(model, text.slice(0, OutputText.MAX_CHARS))
  expect(whole).toBeGreaterThan(kept * 1.4)
  // Extrapolated from the part counted: within a token a piece of the whole text's count.
  expect(row.output_tokens).toBeGreaterThan(whole * 0.99)
  expect(row.output_tokens).toBeLessThan(whole * 1.01)
}

describe('the estimate of an output longer than the text kept for it (a stream without usage)', () => {
  it('Chat Completions: 4.8M characters counted whole, not as their first 2M', async () => {
    const content = longText(4_800_000)
    const chunk = (delta: object, finish: string | null = null) => ({ id: 'chatcmpl-big', object: 'chat.completion.chunk', created: 1, model: 'gpt-4o-mini', choices: [{ index: 0, delta, finish_reason: finish }] })
    const events = [chunk({ role: 'assistant', content: '' }), ...pieces(content).map((p) => chunk({ content: p })), chunk({}, 'length')]
    const chunks = [...sse(events), Buffer.from('data: [DONE]\n\n')]
    s.upstream.setResponder(() => ({ status: 200, headers: { 'content-type': 'text/event-stream' }, chunks }))
    const row = await recorded(s.t, () => postJson(`${s.t.url}/v1/chat/completions`, { model: 'gpt-4o-mini', stream: true, messages: [{ role: 'user', content: 'hi' }] }))
    await expectWholeCounted(row, 'gpt-4o-mini', content)
  }, 120_000)

  it('Gemini: a stream without usageMetadata, 3M characters', async () => {
    const content = longText(3_000_000)
    const answer = (text: string, finishReason?: string) => ({ candidates: [{ content: { role: 'model', parts: [{ text }] }, ...(finishReason ? { finishReason } : {}) }], modelVersion: 'gemini-2.5-flash' })
    const events = [...pieces(content).map((p) => answer(p)), answer('', 'MAX_TOKENS')]
    const chunks = sse(events)
    s.upstream.setResponder(() => ({ status: 200, headers: { 'content-type': 'text/event-stream' }, chunks }))
    const row = await recorded(s.t, () =>
      postJson(`${s.t.url}/gemini/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse`, { contents: [{ role: 'user', parts: [{ text: 'hi' }] }] }, { 'x-goog-api-key': 'AIzaSy-test-gemini-key-0000000001' }),
    )
    await expectWholeCounted(row, 'gemini-2.5-flash', content)
  }, 120_000)

  it('Bedrock ConverseStream: a stream without its metadata event, 3M characters', async () => {
    const model = 'us.anthropic.claude-sonnet-4-5-20250929-v1:0'
    const content = longText(3_000_000)
    const chunks = [
      eventMessage('messageStart', { role: 'assistant' }),
      ...pieces(content).map((text) => eventMessage('contentBlockDelta', { contentBlockIndex: 0, delta: { text } })),
      eventMessage('messageStop', { stopReason: 'max_tokens' }),
    ]
    s.upstream.setResponder(() => ({ status: 200, headers: { 'content-type': 'application/vnd.amazon.eventstream' }, chunks }))
    const row = await recorded(s.t, () =>
      postJson(`${s.t.url}/bedrock/us-east-1/model/${model}/converse-stream`, { messages: [] }, { authorization: 'Bearer ABSKQmVkcm9ja0FQSUtleS1idXJucmF0ZS10ZXN0LTAwMDE=' }),
    )
    await expectWholeCounted(row, model, content)
  }, 120_000)
})
