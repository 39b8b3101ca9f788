import { describe, expect, it } from 'vitest'
import { forbiddenStatus } from './forbidden-refusal'

describe('forbiddenStatus', () => {
  const budget = { error: { type: 'budget_exceeded', message: 'm' } }
  it('answers Qwen Code and Cline a budget or loop refusal as a 403, every other client as it was', () => {
    expect(forbiddenStatus('qwen-code', 429, budget, { 'x-should-retry': 'false', 'retry-after': '3600' })).toBe(403)
    expect(forbiddenStatus('cline', 429, { error: { type: 'loop_detected', message: 'm' } }, { 'x-should-retry': 'false' })).toBe(403)
    expect(forbiddenStatus('claude-code', 429, budget, { 'x-should-retry': 'false' })).toBe(429)
    expect(forbiddenStatus('', 429, budget, {})).toBe(429)
  })

  it('leaves a per-minute rate limit, a refusal for calls in flight and any other status to be retried as they are', () => {
    expect(forbiddenStatus('qwen-code', 429, { error: { type: 'rate_limited', message: 'm' } }, { 'x-should-retry': 'true', 'retry-after': '60' })).toBe(429)
    expect(forbiddenStatus('cline', 429, budget, { 'x-should-retry': 'true', 'retry-after': '2' })).toBe(429)
    expect(forbiddenStatus('cline', 503, budget, {})).toBe(503)
  })
})
