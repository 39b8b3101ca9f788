import { describe, expect, it } from 'vitest'
import { encodeEventMessage, eventMessage } from '../support/event-stream'
import { postJson } from '../support/http'
import { serverOverMockUpstream } from '../support/server'
import { libraryPrice, recorded } from './ledger'

/**
 * A Bedrock stream that ends in an exception message, through a real server and ledger: Bedrock
 * answers 200 and then sends the error inside the event stream (ResponseStream's
 * `throttlingException`, `serviceUnavailableException`, `modelStreamErrorException`, …), as
 * Anthropic sends an `error` event (see anthropic-stream-errors.test.ts).
 */

const s = serverOverMockUpstream()
const HEADERS = { authorization: 'Bearer ABSKQmVkcm9ja0FQSUtleS1idXJucmF0ZS10ZXN0LTAwMDE=' }
const BASE = '/bedrock/us-east-1'
const MODEL = 'us.anthropic.claude-sonnet-4-5-20250929-v1:0'
const BIG_PROMPT = 'word '.repeat(20_000)

/** An exception message as Bedrock sends one inside a 200 event stream. */
function exception(type: string, message: string): Buffer {
  return encodeEventMessage(
    {
      ':exception-type': { type: 'string', value: type },
      ':content-type': { type: 'string', value: 'application/json' },
      ':message-type': { type: 'string', value: 'exception' },
    },
    JSON.stringify({ message }),
  )
}

/** One of Anthropic's events in an InvokeModelWithResponseStream `chunk`. */
const chunk = (ev: object) => eventMessage('chunk', { bytes: Buffer.from(JSON.stringify(ev)).toString('base64') })

function streams(chunks: Buffer[]): void {
  s.upstream.setResponder(() => ({ status: 200, headers: { 'content-type': 'application/vnd.amazon.eventstream' }, chunks, delayMs: 1 }))
}

const invoke = () =>
  postJson(`${s.t.url}${BASE}/model/${MODEL}/invoke-with-response-stream`, { anthropic_version: 'bedrock-2023-05-31', max_tokens: 100, messages: [{ role: 'user', content: BIG_PROMPT }] }, HEADERS)
const converse = () => postJson(`${s.t.url}${BASE}/model/${MODEL}/converse-stream`, { messages: [{ role: 'user', content: [{ text: BIG_PROMPT }] }] }, HEADERS)

describe('a Bedrock stream whose first message is an exception (nothing generated)', () => {
  it('InvokeModelWithResponseStream: costs nothing (not an estimate of its prompt) and records the exception', async () => {
    streams([exception('throttlingException', 'Too many tokens, please wait before trying again.')])
    const row = await recorded(s.t, invoke)
    expect(row).toMatchObject({ status: 200, error: 'throttlingException', input_tokens: 0, output_tokens: 0, cost_usd: 0, estimated: 0 })
  })

  it('ConverseStream: the same', async () => {
    streams([exception('serviceUnavailableException', 'Bedrock is unable to process your request.')])
    const row = await recorded(s.t, converse)
    expect(row).toMatchObject({ status: 200, error: 'serviceUnavailableException', input_tokens: 0, output_tokens: 0, cost_usd: 0, estimated: 0 })
  })
})

describe('a Bedrock stream cut by an exception after it started', () => {
  it("InvokeModelWithResponseStream of Claude: message_start's prompt counts stand, the output is estimated, the exception recorded", async () => {
    const text = 'A partial answer that the exception cut short. '.repeat(20)
    streams([
      chunk({ type: 'message_start', message: { id: 'msg_bdrk_cut', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5-20250929', content: [], usage: { input_tokens: 1_200, output_tokens: 1 } } }),
      chunk({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }),
      chunk({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text } }),
      exception('modelStreamErrorException', 'The model stream failed.'),
    ])
    const row = await recorded(s.t, invoke)
    expect(row).toMatchObject({ status: 200, error: 'modelStreamErrorException', input_tokens: 1_200, estimated: 1, response_id: 'msg_bdrk_cut' })
    expect(row.output_tokens).toBeGreaterThan(100)
    expect(row.cost_usd).toBe(libraryPrice('aws', { input_tokens: 1_200, output_tokens: row.output_tokens }, MODEL, row.ts))
  })

  it('ConverseStream: estimated from its prompt and what streamed, the exception recorded', async () => {
    streams([
      eventMessage('messageStart', { role: 'assistant' }),
      eventMessage('contentBlockDelta', { contentBlockIndex: 0, delta: { text: 'A partial answer. '.repeat(20) } }),
      exception('modelStreamErrorException', 'The model stream failed.'),
    ])
    const row = await recorded(s.t, converse)
    expect(row).toMatchObject({ status: 200, error: 'modelStreamErrorException', estimated: 1 })
    expect(row.input_tokens).toBeGreaterThan(10_000)
    expect(row.output_tokens).toBeGreaterThan(0)
    expect(row.cost_usd).toBeGreaterThan(0)
  })
})
