import { SharedTable } from '../storage/shared-table'
import type { SqlStore } from '../storage/sql'
import type { Rule } from './rules'
import { type RuleInput, type RuleRow, type RuleWriter, optionsJson, toRule } from './store'

/**
 * Runtime budget rules in PostgreSQL's `budget_rules`, shared by every instance on the database
 * (versioned in `budget_rules_version`; see SharedTable): a rule created, changed or deleted
 * through any instance is enforced by all of them within about a second.
 */
export class PgRuleStore extends SharedTable<Rule> implements RuleWriter {
  constructor(store: SqlStore, onChange: (rules: Rule[]) => void) {
    super(store, 'budget_rules_version', onChange)
  }

  protected async read(): Promise<Rule[]> {
    return (await this.store.all<RuleRow>('SELECT * FROM budget_rules ORDER BY api_key_pattern')).map(toRule)
  }

  put(input: RuleInput, now = Date.now()): Promise<{ rule: Rule; created: boolean }> {
    return this.write(async (tx) => {
      const existed = (await tx.get('SELECT 1 AS x FROM budget_rules WHERE api_key_pattern = @p', { p: input.api_key_pattern })) !== undefined
      await tx.run(
        `INSERT INTO budget_rules (api_key_pattern, daily_limit_usd, monthly_limit_usd, action, soft_limit_pct, options, created_at)
         VALUES (@api_key_pattern, @daily_limit_usd, @monthly_limit_usd, @action, @soft_limit_pct, @options, @created_at)
         ON CONFLICT (api_key_pattern) DO UPDATE SET
           daily_limit_usd = excluded.daily_limit_usd, monthly_limit_usd = excluded.monthly_limit_usd,
           action = excluded.action, soft_limit_pct = excluded.soft_limit_pct, options = excluded.options,
           created_at = excluded.created_at`,
        {
          api_key_pattern: input.api_key_pattern,
          daily_limit_usd: input.daily_limit_usd,
          monthly_limit_usd: input.monthly_limit_usd,
          action: input.action,
          soft_limit_pct: input.soft_limit_pct,
          options: optionsJson(input),
          created_at: now,
        },
      )
      const row = await tx.get<RuleRow>('SELECT * FROM budget_rules WHERE api_key_pattern = @p', { p: input.api_key_pattern })
      return { result: { rule: toRule(row!), created: !existed }, changed: true }
    })
  }

  delete(pattern: string): Promise<boolean> {
    return this.write(async (tx) => {
      const n = await tx.run('DELETE FROM budget_rules WHERE api_key_pattern = @p', { p: pattern })
      return { result: n > 0, changed: n > 0 }
    })
  }
}
