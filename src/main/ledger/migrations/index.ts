import type Database from 'better-sqlite3'
import { MIGRATIONS_1_10 } from './versions-01-10'
import { MIGRATIONS_11_18 } from './versions-11-18'
import { MIGRATIONS_FROM_19 } from './versions-19-on'

/**
 * Versioned schema migrations, applied in order at start-up inside one transaction each;
 * `PRAGMA user_version` records the last one applied. Never edit a released migration:
 * append a new one (to versions-19-on.ts, or a new file after it once that one grows long).
 */
export interface Migration {
  version: number
  description: string
  up: (db: Database.Database) => void
}

/** Every migration, in order of version (each file holds a range of them). */
export const MIGRATIONS: Migration[] = [...MIGRATIONS_1_10, ...MIGRATIONS_11_18, ...MIGRATIONS_FROM_19]

/**
 * A database older than this Burnrate's schema, opened where it must not be upgraded: another
 * Burnrate serves its data folder, and may not know the newer schema (../../cli/target.ts).
 */
export class SchemaBehindError extends Error {
  constructor(
    readonly file: string,
    readonly current: number,
    readonly latest: number,
  ) {
    super(`the database ${file} is at schema version ${current}, older than this Burnrate's (${latest})`)
  }
}

/** The schema version the database records, and the newest these migrations make. */
export function schemaVersions(db: Database.Database, migrations: readonly Migration[] = MIGRATIONS): { current: number; latest: number } {
  return { current: db.pragma('user_version', { simple: true }) as number, latest: migrations.reduce((m, x) => Math.max(m, x.version), 0) }
}

export function migrate(db: Database.Database, migrations: readonly Migration[] = MIGRATIONS): number {
  const { current, latest } = schemaVersions(db, migrations)
  if (current > latest) {
    throw new Error(
      `the database schema is version ${current}, newer than this Burnrate knows (${latest}); upgrade Burnrate`,
    )
  }
  for (const m of migrations) {
    if (m.version <= current) continue
    // Each step holds the write lock from its start and reads the version again under it: another
    // process upgrading the same file at once (an import beside a server starting) may have run it.
    db.transaction(() => {
      if ((db.pragma('user_version', { simple: true }) as number) >= m.version) return
      m.up(db)
      db.pragma(`user_version = ${m.version}`)
    }).immediate()
  }
  return latest
}
