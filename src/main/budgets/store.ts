import type Database from 'better-sqlite3'
import { DEFAULT_RULE_OPTIONS, RULE_OPTION_FIELDS, type BudgetAction, type BudgetRuleOptions } from '../../shared/api'
import type { Rule } from './rules'

export interface RuleRow {
  api_key_pattern: string
  daily_limit_usd: number | null
  monthly_limit_usd: number | null
  action: BudgetAction
  soft_limit_pct: number | null
  /** JSON of the second-wave fields (migration 4). */
  options: string
  created_at: number
}

export interface RuleInput extends BudgetRuleOptions {
  api_key_pattern: string
  daily_limit_usd: number | null
  monthly_limit_usd: number | null
  action: BudgetAction
  soft_limit_pct: number | null
}


export function toRule(r: RuleRow): Rule {
  const { options, ...rest } = r
  let extra: Partial<BudgetRuleOptions> = {}
  try {
    extra = JSON.parse(options) as Partial<BudgetRuleOptions>
  } catch {
    // A column nobody but this file writes; unreadable means no options.
  }
  return { ...rest, ...DEFAULT_RULE_OPTIONS, ...extra, source: 'runtime' }
}

export function optionsJson(input: RuleInput): string {
  const o: Record<string, unknown> = {}
  for (const f of RULE_OPTION_FIELDS) o[f] = input[f]
  return JSON.stringify(o)
}

/**
 * Runtime budget rules in the `budget_rules` table: the single source of truth. Every write is
 * one synchronous transaction; once it has committed `onChange` gets the rules read back from
 * the table, so the engine's index changes in the same step as the write: the very next proxied
 * call sees it.
 */
export class RuleStore {
  private readonly selectAll: Database.Statement
  private readonly selectOne: Database.Statement
  private readonly upsertStmt: Database.Statement
  private readonly deleteStmt: Database.Statement
  private readonly upsertTx: (input: RuleInput, now: number) => { rule: Rule; created: boolean }
  private readonly deleteTx: (pattern: string) => boolean
  private readonly replaceTx: (rules: readonly Rule[]) => void

  constructor(
    db: Database.Database,
    private readonly onChange: (rules: Rule[]) => void,
  ) {
    this.selectAll = db.prepare('SELECT * FROM budget_rules ORDER BY api_key_pattern')
    this.selectOne = db.prepare('SELECT * FROM budget_rules WHERE api_key_pattern = ?')
    this.upsertStmt = db.prepare(
      `INSERT INTO budget_rules (api_key_pattern, daily_limit_usd, monthly_limit_usd, action, soft_limit_pct, options, created_at)
       VALUES (@api_key_pattern, @daily_limit_usd, @monthly_limit_usd, @action, @soft_limit_pct, @options, @created_at)
       ON CONFLICT (api_key_pattern) DO UPDATE SET
         daily_limit_usd = excluded.daily_limit_usd, monthly_limit_usd = excluded.monthly_limit_usd,
         action = excluded.action, soft_limit_pct = excluded.soft_limit_pct, options = excluded.options,
         created_at = excluded.created_at`,
    )
    this.deleteStmt = db.prepare('DELETE FROM budget_rules WHERE api_key_pattern = ?')
    this.upsertTx = db.transaction((input: RuleInput, now: number) => {
      const existed = this.selectOne.get(input.api_key_pattern) !== undefined
      this.upsertStmt.run({
        api_key_pattern: input.api_key_pattern,
        daily_limit_usd: input.daily_limit_usd,
        monthly_limit_usd: input.monthly_limit_usd,
        action: input.action,
        soft_limit_pct: input.soft_limit_pct,
        options: optionsJson(input),
        created_at: now,
      })
      const rule = toRule(this.selectOne.get(input.api_key_pattern) as RuleRow)
      return { rule, created: !existed }
    })
    this.deleteTx = db.transaction((pattern: string) => {
      return this.deleteStmt.run(pattern).changes > 0
    })
    const clear = db.prepare('DELETE FROM budget_rules')
    this.replaceTx = db.transaction((rules: readonly Rule[]) => {
      clear.run()
      for (const r of rules) {
        this.upsertStmt.run({
          api_key_pattern: r.api_key_pattern,
          daily_limit_usd: r.daily_limit_usd,
          monthly_limit_usd: r.monthly_limit_usd,
          action: r.action,
          soft_limit_pct: r.soft_limit_pct,
          options: optionsJson(r),
          created_at: r.created_at ?? 0,
        })
      }
    })
  }

  all(): Rule[] {
    return (this.selectAll.all() as RuleRow[]).map(toRule)
  }

  /** Makes the table hold exactly `rules` (PG mode: the local copy of the shared rules), without `onChange`. */
  replaceAll(rules: readonly Rule[]): void {
    this.replaceTx(rules)
  }

  /** Stores `input`, replacing the runtime rule with the same pattern; `created` is false when one was replaced. */
  put(input: RuleInput, now = Date.now()): { rule: Rule; created: boolean } {
    const out = this.upsertTx(input, now)
    // Committed: the index follows in the same synchronous step, before any other call runs.
    this.onChange(this.all())
    return out
  }

  /** Deletes the runtime rule with exactly this pattern; false when there was none. */
  delete(pattern: string): boolean {
    const deleted = this.deleteTx(pattern)
    if (deleted) this.onChange(this.all())
    return deleted
  }
}

/** What the admin API needs of a rule store: SQLite's answers at once, PostgreSQL's as promises. */
export interface RuleWriter {
  put(input: RuleInput, now?: number): { rule: Rule; created: boolean } | Promise<{ rule: Rule; created: boolean }>
  delete(pattern: string): boolean | Promise<boolean>
}
