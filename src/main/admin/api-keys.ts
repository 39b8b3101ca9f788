import type { Router } from 'express'
import type { ApiKeyUsage } from '../../shared/api'
import type { Budgets } from '../budgets'
import type { SpendTracker } from '../ledger/spend'
import { ruleJson } from './rule-json'

/**
 * GET `/api-keys`: every key hash seen this month, from the engine's in-memory registry (seeded
 * from the calls table at start-up, then fed by every recorded call) and the ledger's spend.
 */
export function apiKeyRoutes(router: Router, budgets: Budgets, spend: SpendTracker): void {
  router.get('/api-keys', (_req, res) => {
    const now = Date.now()
    const rows: ApiKeyUsage[] = budgets.engine.keysThisMonth(now).map((s) => {
      const money = spend.key(s.hash, now)
      const rule = budgets.engine.ruleFor(s.hash)
      return {
        api_key_hash: s.hash,
        key_hint: s.hint,
        tenant: s.tenant,
        requests_month: s.requestsMonth,
        spend_today_usd: money.day,
        spend_month_usd: money.month,
        last_seen_at: s.lastSeen === null ? null : new Date(s.lastSeen).toISOString(),
        rule: rule ? ruleJson(rule) : null,
      }
    })
    rows.sort(
      (a, b) =>
        b.spend_month_usd - a.spend_month_usd ||
        (b.last_seen_at ?? '').localeCompare(a.last_seen_at ?? '') ||
        a.api_key_hash.localeCompare(b.api_key_hash),
    )
    res.json(rows)
  })
}
