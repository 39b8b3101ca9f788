import type { SqlReader } from '../storage/sql'

/**
 * What a read of `calls` that counts requests leaves out: imported calls the proxy's record of the
 * same answer superseded (../import/supersede.ts), kept at 0 tokens and $0 for the audit trail,
 * no request (the rollups moved by one request less when each was superseded).
 */
export const REQUESTS_ONLY = ' AND superseded_by IS NULL'

/** ` AND tenant = @tenant` when restricted to a tenant, else nothing. */
export function andTenant(tenant: string | null): string {
  return tenant === null ? '' : ' AND tenant = @tenant'
}

/**
 * ` INDEXED BY <index>` on SQLite, whose planner cannot know what the rollups know (how many
 * calls a window holds); nothing on PostgreSQL, whose planner has statistics and no such clause.
 */
export function indexedBy(q: SqlReader, index: string): string {
  return q.dialect === 'sqlite' ? ` INDEXED BY ${index}` : ''
}

/** A text column ordered byte by byte on both stores (PostgreSQL's default collation follows the locale). */
export function bytewise(q: SqlReader, column: string): string {
  return q.dialect === 'postgres' ? `${column} COLLATE "C"` : column
}

/**
 * The start of the bucket of `size` ms that holds the instant `expr` (ms), in SQL alike on SQLite and
 * PostgreSQL: floored, as the rollup writer and the timeseries floor (`Math.floor(ts / size) * size`).
 * `expr / size` is not: both truncate toward zero, so an instant before 1970 fell in the next bucket.
 */
export function bucketStartSql(expr: string, size: number): string {
  if (!Number.isSafeInteger(size) || size <= 0) throw new Error(`bucket size ${size}`)
  return `(${expr} - ((${expr} % ${size}) + ${size}) % ${size})`
}

/** The sum of `expr` over the rows, 0 when there are none (SQLite's `total`, which PostgreSQL lacks). */
export function total(expr: string): string {
  return `coalesce(sum(${expr}), 0)`
}

/** How many rows meet `cond` (a comparison is a number on SQLite but a boolean on PostgreSQL). */
export function countIf(cond: string): string {
  return total(`CASE WHEN ${cond} THEN 1 ELSE 0 END`)
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
