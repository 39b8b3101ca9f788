import { describe, expect, it } from 'vitest'
import { closeReason } from './budget-check'

describe('closeReason', () => {
  it('keeps a reason that fits a close frame as it is', () => {
    expect(closeReason('budget_exceeded (budget rule "sk-dev-*"): this turn was refused')).toBe('budget_exceeded (budget rule "sk-dev-*"): this turn was refused')
  })

  it('cuts a longer one to 123 UTF-8 bytes at a whole character, marked with an ellipsis', () => {
    const long = `budget_exceeded (budget rule "${'é'.repeat(100)}"): this turn was refused and not sent upstream`
    const r = closeReason(long)
    expect(Buffer.byteLength(r)).toBeLessThanOrEqual(123)
    expect(r.endsWith('…')).toBe(true)
    expect(long.startsWith(r.slice(0, -1))).toBe(true)
    expect(r).not.toContain('\ufffd')
  })
})
