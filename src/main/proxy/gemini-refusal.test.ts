import { describe, expect, it } from 'vitest'
import { geminiRefusalBody } from './gemini-refusal'

const ERROR_INFO = { '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'QUOTA_EXHAUSTED', domain: 'cloudcode-pa.googleapis.com' }

describe('geminiRefusalBody', () => {
  it('makes a budget refusal the Google quota error Gemini CLI stops on, keeping the contract fields and the message', () => {
    const body = { error: { type: 'budget_exceeded', message: 'API key sk-…0001 has spent $5.00 of the daily limit of $5.00', period: 'daily', limit_usd: 5, spent_usd: 5, resets_at: '2026-12-08T00:00:00.000Z' } }
    const g = geminiRefusalBody(429, body, { 'x-should-retry': 'false', 'retry-after': '3600' })!
    expect(g.error).toEqual({
      ...body.error,
      code: 429,
      status: 'RESOURCE_EXHAUSTED',
      details: [{ ...ERROR_INFO, metadata: { burnrate_error_type: 'budget_exceeded' } }, { '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '3600s' }],
    })
  })

  it('a loop refusal (no Retry-After): the same error with no RetryInfo', () => {
    const g = geminiRefusalBody(429, { error: { type: 'loop_detected', message: 'stuck in a loop', repeats: 5 } }, { 'x-should-retry': 'false' })!
    expect(g.error).toMatchObject({ type: 'loop_detected', message: 'stuck in a loop', repeats: 5, code: 429, status: 'RESOURCE_EXHAUSTED' })
    expect((g.error as { details: unknown[] }).details).toEqual([expect.objectContaining(ERROR_INFO)])
  })

  it('leaves a per-minute rate limit and a refusal for calls in flight to be retried', () => {
    expect(geminiRefusalBody(429, { error: { type: 'rate_limited', message: 'm' } }, { 'x-should-retry': 'true', 'retry-after': '60' })).toBeUndefined()
    expect(geminiRefusalBody(429, { error: { type: 'budget_exceeded', message: 'm' } }, { 'x-should-retry': 'true', 'retry-after': '2' })).toBeUndefined()
    expect(geminiRefusalBody(503, { error: { type: 'service_unavailable', message: 'm' } }, {})).toBeUndefined()
  })
})
