import { describe, expect, it } from 'vitest'
import { DEFAULT_RULE_OPTIONS } from '../../src/shared/api'
import { slackBody, thresholdPayload } from '../../src/main/alerts/payload'
import type { ThresholdEvent } from '../../src/main/budgets/announcer'
import type { Rule } from '../../src/main/budgets/rules'

const NOW = Date.UTC(2026, 2, 10, 12)

function event(spent: number, limit: number, pct: number): ThresholdEvent {
  const rule = { ...DEFAULT_RULE_OPTIONS, api_key_pattern: 'sk-dev-*', daily_limit_usd: limit, monthly_limit_usd: null, action: 'warn', soft_limit_pct: null, source: 'config', created_at: null } as Rule
  return {
    rule,
    key: { hash: 'a'.repeat(64), hint: 'sk-…9f3a' } as ThresholdEvent['key'],
    state: { period: 'daily', limit, spent, start: Date.UTC(2026, 2, 10), resetsAt: Date.UTC(2026, 2, 11) },
    pct,
  }
}

/** The Slack text reads amounts as the dashboard does: a spend and its limit that differ never read the same, a share under the whole never as 100%. */
describe('the Slack alert text', () => {
  it('a 90% alert whose call took the spend to $9.996 of $10.00 does not say "$10.00 of its $10.00 … (100%"', () => {
    const text = slackBody(thresholdPayload(event(9.996, 10, 0.9), 'alert_x', NOW)).text
    expect(text).toContain('has spent $9.996 of its $10.00 daily limit (99.9%, alert at 90%)')
    // Amounts that differ enough read as everywhere else.
    expect(slackBody(thresholdPayload(event(5.5, 10, 0.5), 'alert_y', NOW)).text).toContain('has spent $5.50 of its $10.00 daily limit (55%, alert at 50%)')
  })
})
