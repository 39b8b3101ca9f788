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
