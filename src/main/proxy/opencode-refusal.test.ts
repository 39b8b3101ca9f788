import { describe, expect, it } from 'vitest'
import { opencodeFrameHeaders, opencodeRefusal, unretriedText } from './opencode-refusal'

// opencode 1.18's retry patterns (packages/opencode/src/session/retry.ts), as it tests a message and a body.
const OPENCODE_RETRIES = [/429|500|502|503|504|524/i, /rate increased too quickly|rate limit|rate-limit|rate_limit|too many requests/i, /\btry again (?:later|in\b)/i]

describe('opencodeRefusal', () => {
  it('turns a block refusal into a 403 whose text opencode does not retry, keeping the contract fields', () => {
    const body = { error: { type: 'budget_exceeded', message: 'spent $500.00 of the daily limit of $500.00; rate limit; try again later', limit_usd: 500, spent_usd: 12.5, period: 'daily' } }
    const r = opencodeRefusal(429, body, { 'x-should-retry': 'false', 'retry-after': '3600' })!
    expect(r.status).toBe(403)
    const text = JSON.stringify(r.body)
    for (const re of OPENCODE_RETRIES) expect(text).not.toMatch(re)
    expect(r.body).toMatchObject({ type: 'error', error: { type: 'budget_exceeded', spent_usd: 12.5, period: 'daily' } })
    expect((r.body.error as any).limit_usd).toBeUndefined()
    expect(((r.body.error as any).message as string).replace(/\u2060/g, '')).toBe(body.error.message)
  })

  it('leaves a per-minute rate limit and a refusal for calls in flight to be retried', () => {
    expect(opencodeRefusal(429, { error: { type: 'rate_limited', message: 'm' } }, { 'x-should-retry': 'true' })).toBeUndefined()
    expect(opencodeRefusal(429, { error: { type: 'budget_exceeded', message: 'm' } }, { 'x-should-retry': 'true' })).toBeUndefined()
  })

  it('breaks every match, however many', () => {
    expect(unretriedText('429 429 5000')).not.toMatch(OPENCODE_RETRIES[0])
  })

  it("keeps in a socket refusal's headers only those opencode can take as headers and would not retry on", () => {
    const headers = {
      'x-should-retry': 'false',
      'retry-after': '15000',
      'x-burnrate-runaway-warning': 'spend_rate: 0.5000 USD in the last minute in session s',
      'x-burnrate-budget-warning': 'caf\u00e9',
      'x-burnrate-other': 'fine',
    }
    expect(opencodeFrameHeaders(headers)).toEqual({ 'x-should-retry': 'false', 'x-burnrate-other': 'fine' })
    expect(opencodeFrameHeaders({ 'retry-after': '3600' })).toEqual({ 'retry-after': '3600' })
  })
})
