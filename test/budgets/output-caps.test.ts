import { describe, expect, it } from 'vitest'
import { DEFAULT_MAX_OUTPUT_TOKENS, maxOutputTokens } from '../../src/main/budgets/worst-case'
import { answer } from '../providers/ledger'
import { postJson } from '../support/http'
import { serverOverMockUpstream } from '../support/server'

/**
 * Under `reserve: max_tokens` a call reserves its own output cap, wherever its API puts it: a
 * Bedrock Converse call says `inferenceConfig.maxTokens` (it has no `max_tokens`), and reserving
 * 32,768 output tokens instead refused a call that could cost at most a few tenths of a cent.
 */
const s = serverOverMockUpstream({
  budgets: { rules: [{ api_key_pattern: '*', daily_limit_usd: 0.05, action: 'block', reserve: 'max_tokens' }] },
})
const HEADERS = { authorization: 'Bearer ABSKQmVkcm9ja0FQSUtleS1idXJucmF0ZS10ZXN0LTAwMDE=' }
const MODEL = 'us.anthropic.claude-sonnet-4-5-20250929-v1:0'
const BASE = '/bedrock/us-east-1'

describe('reserve: max_tokens reads each API’s output cap', () => {
  it('InvokeModel with max_tokens 100 is admitted under a $0.05 limit', async () => {
    answer(s.upstream, { id: 'msg_1', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5', content: [{ type: 'text', text: 'hi' }], usage: { input_tokens: 10, output_tokens: 2 } })
    const r = await postJson(`${s.t.url}${BASE}/model/${MODEL}/invoke`, { anthropic_version: 'bedrock-2023-05-31', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] }, HEADERS)
    expect(r.status).toBe(200)
  })

  it('Converse with inferenceConfig.maxTokens 100 is admitted under a $0.05 limit (its worst case is about $0.0016)', async () => {
    answer(s.upstream, { output: { message: { role: 'assistant', content: [{ text: 'hi' }] } }, stopReason: 'end_turn', usage: { inputTokens: 10, outputTokens: 2, totalTokens: 12 } })
    const r = await postJson(`${s.t.url}${BASE}/model/${MODEL}/converse`, { messages: [{ role: 'user', content: [{ text: 'hi' }] }], inferenceConfig: { maxTokens: 100 } }, HEADERS)
    expect(r.status, String(r.body)).toBe(200)
  })

  it('finds the cap of every request shape, times its choices', () => {
    expect(maxOutputTokens({ max_completion_tokens: 7, max_tokens: 9 })).toBe(7)
    expect(maxOutputTokens({ max_output_tokens: 11 })).toBe(11)
    expect(maxOutputTokens({ generationConfig: { maxOutputTokens: 12, candidateCount: 2 } })).toBe(24)
    expect(maxOutputTokens({ inferenceConfig: { maxTokens: 13 } })).toBe(13)
    // Gemini Code Assist wraps Gemini's request.
    expect(maxOutputTokens({ model: 'gemini-2.5-pro', project: 'p', request: { contents: [], generationConfig: { maxOutputTokens: 14 } } })).toBe(14)
    expect(maxOutputTokens({ inferenceConfig: { maxTokens: 0 } })).toBe(DEFAULT_MAX_OUTPUT_TOKENS)
    expect(maxOutputTokens('not an object')).toBe(DEFAULT_MAX_OUTPUT_TOKENS)
  })
})
