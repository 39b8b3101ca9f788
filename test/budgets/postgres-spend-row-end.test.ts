import { describe, expect, it } from 'vitest'
import { DEFAULT_RULE_OPTIONS } from '../../src/shared/api'
import { BudgetEngine } from '../../src/main/budgets/engine'
import type { Rule } from '../../src/main/budgets/rules'
import { spendCounter } from '../../src/main/budgets/state/pg/call-spend'
import { PgBudgetState } from '../../src/main/budgets/state/postgres'
import { insertCalls } from '../../src/main/ledger/pg/insert'
import type { CallRecord } from '../../src/main/ledger/record'
import { openai } from '../../src/main/providers/openai'
import { hashKey } from '../../src/main/proxy/attribution'
import type { CallContext } from '../../src/main/proxy/gate'
import { migratePostgres } from '../../src/main/storage/postgres-migrations'
import { keyHint } from '../../src/shared/key-hint'
import { usePostgres } from '../support/pg-harness'

/**
 * A calendar spend row may be created after its period ended: a call stamped just before
 * midnight is decided against yesterday's row, which no call had needed yet, while another
 * instance has already stored calls of the new day. The row is seeded from its own period's
 * calls only: the next day's were counted in it too, and refused a call yesterday had room for.
 */
const h = usePostgres({ upstream: false })

const DAY = 86_400_000
const UTC = { timezone: 'UTC', budgets: { week_start: 'monday' as const } }

function record(key: string, cost: number, ts: number, callKey: string): CallRecord & { call_key: string } {
  return {
    ts, provider: 'openai', model: 'gpt-4o-mini', endpoint: 'chat.completions', api_key_hash: hashKey(key), key_hint: keyHint(key),
    tenant: '', agent: '', session: '', status: 200, streamed: false, input_tokens: 10, output_tokens: 10, cache_read_tokens: 0,
    cache_write_tokens: 0, cache_write_1h_tokens: 0, reasoning_tokens: 0, cost_usd: cost, priced: true, estimated: false, latency_ms: 1, error: null,
    call_key: callKey,
  }
}

describe('a calendar spend row created after its period ended', () => {
  it("counts its own period's calls only: the next day's calls do not refuse a call stamped before midnight", async () => {
    const store = h.store(h.database())
    await migratePostgres(store)
    const key = 'sk-late-row-aaaaaaaa-0001'
    const rule = { ...DEFAULT_RULE_OPTIONS, api_key_pattern: 'sk-late-row-*', daily_limit_usd: 1, monthly_limit_usd: null, action: 'block', soft_limit_pct: null, source: 'config', created_at: null } as Rule
    const midnight = Math.floor(Date.now() / DAY) * DAY
    // Stored by another instance (no row of yesterday's for them to count in): $0.50 before midnight, $0.60 after it.
    const calls = [record(key, 0.5, midnight - 60_000, 'late-1'), record(key, 0.6, midnight + 1000, 'late-2')]
    await store.transaction(async (tx) => spendCounter(UTC)(tx, await insertCalls(tx, calls)))

    const state = new PgBudgetState(store)
    const engine = new BudgetEngine('UTC', 1, [rule], [], { worstCase: () => 0.01, expected: () => 0.01, learn: () => {} }, () => [], state)
    try {
      // The call stamped 100 ms before midnight: yesterday's $0.50 leave room for its $0.01.
      const ts = midnight - 100
      const ctx: CallContext = {
        provider: openai,
        shape: { endpoint: 'chat.completions', model: 'gpt-4o-mini', stream: false, billable: true },
        apiKey: key, apiKeyHash: hashKey(key), keyHint: keyHint(key), tenant: '', agent: '', session: '', ts, body: {}, bodyBytes: 10,
      }
      const d = await engine.decide(ctx, ts)
      expect(d.refuse).toBeUndefined()
      const rows = await store.all<{ period: string; period_start: number; spent_usd: number }>(
        'SELECT period, period_start, spent_usd FROM budget_spend WHERE api_key_hash = @k',
        { k: hashKey(key) },
      )
      expect(rows).toEqual([{ period: 'daily', period_start: midnight - DAY, spent_usd: 0.5 }])
      d.settle?.(0)
      expect(await state.settled()).toBe(true)
    } finally {
      await state.close()
    }
  }, 60_000)
})
