import { migratePostgres } from '../storage/postgres-migrations'
import type { SqlStore } from '../storage/sql'
import type { Rule } from './rules'
import { type RuleInput, type RuleRow, type RuleWriter, optionsJson, toRule } from './store'

/** How often an instance looks for rule changes made by the others (README: Team scale → budgets). */
export const RULES_POLL_MS = 1000

/**
 * Runtime budget rules in PostgreSQL's `budget_rules`, shared by every instance on the database.
 * Every write bumps `budget_rules_version` in the same transaction; each instance polls that one
 * row every second and reloads the rules when it moved, so a rule created, changed or deleted
 * through any instance is enforced by all of them within about a second. The instance that wrote
 * reloads before its admin call answers, so its own next call already sees the change.
 */
export class PgRuleStore implements RuleWriter {
  private version = -1
  private timer: NodeJS.Timeout | null = null
  private polling: Promise<boolean> | null = null
  private schema: Promise<unknown> | null = null

  constructor(
    private readonly store: SqlStore,
    private readonly onChange: (rules: Rule[]) => void,
    private readonly migrate: (store: SqlStore) => Promise<unknown> = migratePostgres,
  ) {}

  /**
   * The schema, once: a rule written right after start-up on a new database must not wait for
   * the ledger's first flush to create the tables (migrations take an advisory lock, so running
   * alongside the ledger's is safe). Tried again after a failure.
   */
  private ready(): Promise<unknown> {
    this.schema ??= this.migrate(this.store).catch((err: unknown) => {
      this.schema = null
      throw err
    })
    return this.schema
  }

  async all(): Promise<Rule[]> {
    await this.ready()
    return (await this.store.all<RuleRow>('SELECT * FROM budget_rules ORDER BY api_key_pattern')).map(toRule)
  }

  /** Loads the rules when another instance changed them (or on the first call); true when it did. */
  refresh(): Promise<boolean> {
    // One look at a time; a caller during a look waits for it.
    this.polling ??= this.look().finally(() => {
      this.polling = null
    })
    return this.polling
  }

  private async look(): Promise<boolean> {
    await this.ready()
    const row = await this.store.get<{ version: number }>('SELECT version FROM budget_rules_version WHERE one = 1')
    const v = row?.version ?? 0
    if (v === this.version) return false
    const rules = await this.all()
    this.version = v
    this.onChange(rules)
    return true
  }

  /** Polls every `pollMs` until `close`. */
  start(pollMs = RULES_POLL_MS): void {
    if (this.timer) return
    this.timer = setInterval(() => {
      this.refresh().catch(() => {
        // the database is away: the rules in force stay, the next poll tries again
      })
    }, pollMs)
    this.timer.unref()
  }

  async put(input: RuleInput, now = Date.now()): Promise<{ rule: Rule; created: boolean }> {
    await this.ready()
    const out = await this.store.transaction(async (tx) => {
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
      await tx.run('UPDATE budget_rules_version SET version = version + 1 WHERE one = 1')
      const row = await tx.get<RuleRow>('SELECT * FROM budget_rules WHERE api_key_pattern = @p', { p: input.api_key_pattern })
      return { rule: toRule(row!), created: !existed }
    })
    await this.reloadNow()
    return out
  }

  /** Reloads after this instance's own write (a look already under way may predate it). */
  private async reloadNow(): Promise<void> {
    if (this.polling) await this.polling.catch(() => false)
    await this.refresh()
  }

  async delete(pattern: string): Promise<boolean> {
    await this.ready()
    const deleted = await this.store.transaction(async (tx) => {
      const n = await tx.run('DELETE FROM budget_rules WHERE api_key_pattern = @p', { p: pattern })
      if (n > 0) await tx.run('UPDATE budget_rules_version SET version = version + 1 WHERE one = 1')
      return n > 0
    })
    if (deleted) await this.reloadNow()
    return deleted
  }

  close(): void {
    if (this.timer) clearInterval(this.timer)
    this.timer = null
  }
}
