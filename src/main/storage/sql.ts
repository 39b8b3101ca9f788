/**
 * The one SQL seam both stores sit behind: SQLite (embedded default, better-sqlite3) and
 * PostgreSQL (teams, `pg`). Code above it writes one SQL text with named `@param`s in the
 * subset both dialects share (no `INSERT OR …`, no `instr`, upserts as `ON CONFLICT … DO UPDATE`)
 * and awaits the answer; `dialect` is there for the rare statement that must differ.
 *
 * Integers come back as JavaScript numbers on both (counts, token sums and millisecond
 * timestamps stay far below 2^53); money columns are double precision on both.
 */
export type Dialect = 'sqlite' | 'postgres'
export type SqlParams = Record<string, unknown>

export interface SqlReader {
  readonly dialect: Dialect
  all<T = Record<string, unknown>>(sql: string, params?: SqlParams): Promise<T[]>
  get<T = Record<string, unknown>>(sql: string, params?: SqlParams): Promise<T | undefined>
}

export interface SqlStore extends SqlReader {
  /** Runs a statement; resolves with the number of rows it changed. */
  run(sql: string, params?: SqlParams): Promise<number>
  /**
   * Runs `fn` in one transaction (committed when it resolves, rolled back when it throws).
   * `fn` must reach the database only through the `tx` it is given.
   */
  transaction<T>(fn: (tx: SqlStore) => Promise<T>): Promise<T>
  close(): Promise<void>
}

const NAMED = /@([A-Za-z_][A-Za-z0-9_]*)/g

/** `@name` → `$1…` for PostgreSQL, with the names in order (the same name reuses its number). */
export function toPositional(sql: string): { text: string; names: string[] } {
  const names: string[] = []
  const text = sql.replace(NAMED, (_m, name: string) => {
    let i = names.indexOf(name)
    if (i < 0) i = names.push(name) - 1
    return `$${i + 1}`
  })
  return { text, names }
}
