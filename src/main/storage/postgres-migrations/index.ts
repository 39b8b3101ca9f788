import type { SqlStore } from '../sql'
import { PG_MIGRATIONS_1_5 } from './versions-01-05'
import { PG_MIGRATIONS_6_14 } from './versions-06-14'
import { PG_MIGRATIONS_FROM_15 } from './versions-15-on'

/**
 * The PostgreSQL schema, versioned like SQLite's (`PRAGMA user_version` there, the
 * `burnrate_schema` table here). The tables and columns are the SQLite ones with PostgreSQL
 * types (BIGINT timestamps and counters, DOUBLE PRECISION money, BYTEA histograms), so the
 * same SQL reads both. Several instances starting at once take turns: each migration runs in
 * one transaction under an advisory lock. Never edit a released migration: append a new one (to
 * versions-15-on.ts, or a new file after it once that one grows long).
 */
export interface PgMigration {
  version: number
  description: string
  /** Statements separated by `;`, or a list of statements as they are (a function body holds `;`). */
  sql: string | readonly string[]
}

/** Tables only PostgreSQL has: budget state shared by instances (one SQLite instance keeps it in memory), and alert claims among them. */
export const PG_ONLY_TABLES: readonly string[] = [
  'budget_spend', 'budget_reservations', 'budget_rules_version', 'price_overrides_version', 'budget_window_spend',
  'budget_clock', 'alert_claims', 'budget_window_spend_hour', 'budget_settled', 'import_claims',
]

/** Arbitrary but fixed: the advisory lock Burnrate instances take while migrating. */
const MIGRATION_LOCK = 0x6275726e // "burn"

/** Every migration, in order of version (each file holds a range of them). */
export const PG_MIGRATIONS: PgMigration[] = [...PG_MIGRATIONS_1_5, ...PG_MIGRATIONS_6_14, ...PG_MIGRATIONS_FROM_15]

/**
 * The database holds the schema of a newer Burnrate: nothing is written to it (its tables may
 * mean something else now) until this Burnrate is upgraded. PostgreSQL itself answers.
 */
export class NewerSchemaError extends Error {
  constructor(readonly found: number, readonly known: number) {
    super(`the PostgreSQL schema is version ${found}, newer than this Burnrate knows (${known}); upgrade Burnrate`)
    this.name = 'NewerSchemaError'
  }
}

/** Applies the migrations this database lacks; returns the schema version. */
export async function migratePostgres(store: SqlStore, migrations: readonly PgMigration[] = PG_MIGRATIONS): Promise<number> {
  const latest = migrations.reduce((m, x) => Math.max(m, x.version), 0)
  return store.transaction(async (tx) => {
    await tx.run(`SELECT pg_advisory_xact_lock(${MIGRATION_LOCK})`)
    await tx.run('CREATE TABLE IF NOT EXISTS burnrate_schema (version INTEGER NOT NULL)')
    const row = await tx.get<{ version: number }>('SELECT MAX(version) AS version FROM burnrate_schema')
    const current = row?.version ?? 0
    if (current > latest) throw new NewerSchemaError(current, latest)
    for (const m of migrations) {
      if (m.version <= current) continue
      // Each statement alone: a multi-statement text cannot carry parameters, and needs none here.
      const statements = typeof m.sql === 'string' ? m.sql.split(';').map((s) => s.trim()).filter(Boolean) : m.sql
      for (const stmt of statements) await tx.run(stmt)
      await tx.run('INSERT INTO burnrate_schema (version) VALUES (@v)', { v: m.version })
    }
    return latest
  })
}

const ensured = new WeakMap<SqlStore, Promise<number>>()

/**
 * The schema of `store`'s database, made sure of once per store (tried again after a failure).
 * For what reads or writes its own tables before the ledger's first write has migrated them
 * (shared rules, prices, budget state): migrations take an advisory lock, so running alongside
 * the ledger's is safe.
 */
export function ensurePostgresSchema(store: SqlStore): Promise<number> {
  let p = ensured.get(store)
  if (!p) {
    p = migratePostgres(store).catch((err: unknown) => {
      ensured.delete(store)
      throw err
    })
    ensured.set(store, p)
  }
  return p
}
