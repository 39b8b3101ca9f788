import type { BudgetAlert, BudgetMonitor } from '../budgets/types'
import type { CallRecord } from '../ledger/record'

/** A recorded call with every field filled; tests override what they need. */
export function callRecord(over: Partial<CallRecord> = {}): CallRecord {
  return {
    ts: Date.now(),
    provider: 'openai',
    model: 'gpt-4o-mini',
    endpoint: '/v1/chat/completions',
    api_key_hash: 'a'.repeat(64),
    key_hint: 'sk-…9f3a',
    tenant: '',
    agent: '',
    session: '',
    status: 200,
    streamed: false,
    input_tokens: 10,
    output_tokens: 5,
    cache_read_tokens: 0,
    cache_write_tokens: 0,
    cache_write_1h_tokens: 0,
    reasoning_tokens: 0,
    cost_usd: 0.01,
    priced: true,
    estimated: false,
    latency_ms: 12,
    error: null,
    ...over,
  }
}

export function budgetAlert(over: Partial<BudgetAlert> = {}): BudgetAlert {
  return {
    api_key_pattern: 'sk-dev-*',
    api_key_hash: 'a'.repeat(64),
    key_hint: 'sk-…9f3a',
    period: 'daily',
    level: 'warning',
    spent_usd: 4.12,
    limit_usd: 5,
    resets_at: '2026-11-22T00:00:00.000Z',
    ...over,
  }
}

/** A small in-memory BudgetMonitor: tests raise alerts on it the way the budgets feature does. */
export class FakeBudgets implements BudgetMonitor {
  current: BudgetAlert[] = []
  private readonly listeners = new Set<(a: BudgetAlert) => void>()

  alerts(): BudgetAlert[] {
    return [...this.current]
  }

  onAlert(listener: (alert: BudgetAlert) => void): () => void {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }

  raise(alert: BudgetAlert): void {
    this.current = this.current.filter((a) => !(a.api_key_pattern === alert.api_key_pattern && a.api_key_hash === alert.api_key_hash && a.period === alert.period))
    this.current.push(alert)
    for (const l of this.listeners) l(alert)
  }
}
