import type Database from 'better-sqlite3'

/** Prepared statements, built once per distinct SQL text (the few tenant/no-tenant variants). */
export class Statements {
  private readonly cache = new Map<string, Database.Statement>()

  constructor(readonly db: Database.Database) {}

  get(sql: string): Database.Statement {
    let s = this.cache.get(sql)
    if (!s) {
      s = this.db.prepare(sql)
      this.cache.set(sql, s)
    }
    return s
  }
}

/** ` AND tenant = @tenant` when restricted to a tenant, else nothing. */
export function andTenant(tenant: string | null): string {
  return tenant === null ? '' : ' AND tenant = @tenant'
}

/**
 * ` AND member = @member` when restricted to a team member, else nothing. (The repeated
 * `member <> ''` lets SQLite use the partial index calls_member_ts.)
 */
export function andMember(member: string | null): string {
  return member === null ? '' : " AND member = @member AND member <> ''"
}

/** A call's money: its cost, except a subscription call's (its API-equivalent value is kept apart). */
export const MONEY = "(CASE WHEN billing = 'subscription' THEN 0 ELSE cost_usd END)"
/** A subscription call's API-equivalent value, else 0. */
export const PLAN_VALUE = "(CASE WHEN billing = 'subscription' THEN cost_usd ELSE 0 END)"
