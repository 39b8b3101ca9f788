import type Database from 'better-sqlite3'
import type { Dialect, SqlReader } from '../storage/sql'
import { JOINED_SQL, EXPORT_COLUMNS, EXPORT_COLUMNS_SQL, type ExportFormatter, type ExportRow, ID, TS } from './export-format'
import { andMember } from './sql'

/** Which calls an export holds: `[start, end)`, optionally one tenant's or one team member's, as of `asOf`. */
export interface ExportWindow {
  start: number
  end: number
  tenant: string | null
  member: string | null
  asOf: ExportAsOf
}

/**
 * The calls that were in the ledger when an export began (atExportMoment): every page, segment and
 * count reads only those, so a call committed during the export (a long stream that ends, stamped
 * when it arrived; an import; a team member's calls) is in none of it, whatever its time, and the
 * file is the window as it stood at that moment. SQLite: ids up to `maxId` (ids only grow: a call
 * committed later has a larger one). PostgreSQL: null, no bound in the SQL: the export reads in
 * one REPEATABLE READ transaction, whose snapshot is the moment.
 */
export type ExportAsOf = { maxId: number } | null

/** Where the next page starts: after this (ts, id). */
export interface Keyset {
  afterTs: number
  afterId: number
}

/**
 * The end of a window with no `until`: after every call stored, those stamped ahead of this
 * machine's clock included (a team member's clock running fast, an imported log), so no call is
 * left out of an export for its time.
 */
export const OPEN_END = Number.MAX_SAFE_INTEGER
/** The start of an export with no `since`: the whole ledger, a call stamped before 1970 (an imported log's) too. */
export const OPEN_START = Number.MIN_SAFE_INTEGER

export const firstKeyset = (w: ExportWindow): Keyset => ({ afterTs: w.start - 1, afterId: 0 })

/** The index an export of `w` reads: by member, by tenant (each a window's calls in time order), or by time. */
function exportIndex(w: ExportWindow): string {
  return w.member !== null ? 'calls_member_ts' : w.tenant === null ? 'calls_ts' : 'calls_tenant_ts'
}

/** The window's calls (`[@from, @end)`, the tenant's, the member's) that were in the ledger when the export began. */
function windowWhere(w: ExportWindow): string {
  return `ts >= @from AND ts < @end${w.tenant === null ? '' : ' AND tenant = @tenant'}${andMember(w.member)}${asOfWhere(w.asOf)}`
}

/**
 * The calls of `asOf`. SQLite's id is the rowid, which every index holds: the offset and count
 * queries still read the index alone. PostgreSQL's export transaction sees only its moment's calls.
 */
function asOfWhere(asOf: ExportAsOf): string {
  return asOf === null ? '' : ' AND id <= @maxId'
}

/**
 * One page of the window's calls after the keyset, oldest first (`ts`, then `id`): no statement
 * stays open between pages, so the ledger keeps writing (and checkpointing) during an export.
 * SQLite is told its index (its planner cannot know how many calls a window holds).
 */
export function exportPageSql(dialect: Dialect, w: ExportWindow, limit: number, columns = EXPORT_COLUMNS_SQL): string {
  return `SELECT ${columns} FROM calls${dialect === 'sqlite' ? ` INDEXED BY ${exportIndex(w)}` : ''}
    WHERE ${windowWhere(w)}
      AND (ts > @afterTs OR id > @afterId)
    ORDER BY ts, id LIMIT ${limit}`
}

/**
 * SQLite: the time of the window's call at `@offset` in export order (none past the last), read
 * from the export's index alone (it holds the tenant or member, the time and the id): tens of
 * thousands of entries in a few milliseconds, however scattered the calls are in the table.
 */
export function exportOffsetSql(w: ExportWindow): string {
  return `SELECT ts FROM calls INDEXED BY ${exportIndex(w)} WHERE ${windowWhere(w)} ORDER BY ts LIMIT 1 OFFSET @offset`
}

/** SQLite: the time of the window's last call (none when it has none), from the export's index alone. */
export function exportLastSql(w: ExportWindow): string {
  return `SELECT ts FROM calls INDEXED BY ${exportIndex(w)} WHERE ${windowWhere(w)} ORDER BY ts DESC LIMIT 1`
}

/** SQLite: how many calls the window holds, counted from the export's index, up to `max`. */
export function exportCountSql(w: ExportWindow, max: number): string {
  return `SELECT count(*) FROM (SELECT 1 FROM calls INDEXED BY ${exportIndex(w)} WHERE ${windowWhere(w)} LIMIT ${max})`
}

export function exportPageParams(w: ExportWindow, k: Keyset): Record<string, unknown> {
  return { from: Math.max(w.start, k.afterTs), end: w.end, tenant: w.tenant, member: w.member, afterTs: k.afterTs, afterId: k.afterId, ...w.asOf }
}

/** The keyset after a page's last row. */
export function keysetAfter(rows: readonly ExportRow[]): Keyset {
  const last = rows[rows.length - 1]
  return { afterTs: last[TS] as number, afterId: last[ID] as number }
}

/** A page as the export writes it. */
export interface PageText {
  /** Its text, or its text's UTF-8 bytes (in memory of their own: they can be handed to another thread). */
  text: string | Buffer
  rows: number
  /** The page's first and last rows' keys (null when it had no rows). */
  firstTs: number | null
  keyset: Keyset | null
}

export function pageText(text: string | Buffer, rows: readonly ExportRow[]): PageText {
  return rows.length === 0
    ? { text, rows: 0, firstTs: null, keyset: null }
    : { text, rows: rows.length, firstTs: rows[0][TS] as number, keyset: keysetAfter(rows) }
}

/**
 * Reads pages from a better-sqlite3 connection as arrays (`.raw(true)`: no object per row), of
 * any window with the same tenant and member (one statement for every part of an export). The
 * repeating texts come joined (JOINED_SQL) and the page is written as bytes; a page where the
 * join fails is read again plainly.
 */
export class SqlitePager {
  private readonly plain: Database.Statement
  private readonly joined: Database.Statement
  private offsetTs: Database.Statement | null = null

  constructor(
    private readonly db: Database.Database,
    private readonly w: ExportWindow,
    readonly limit: number,
  ) {
    this.plain = db.prepare(exportPageSql('sqlite', w, limit)).raw(true)
    this.joined = db.prepare(exportPageSql('sqlite', w, limit, JOINED_SQL)).raw(true)
  }

  private params(k: Keyset, start: number, end: number): Record<string, unknown> {
    const p = exportPageParams({ ...this.w, start, end }, k)
    // better-sqlite3 refuses parameters a statement does not name.
    if (this.w.tenant === null) delete p.tenant
    if (this.w.member === null) delete p.member
    return p
  }

  /** The next page after `k` of the window `[start, end)` (by default the pager's own), as `f` writes it. */
  page(f: ExportFormatter, k: Keyset, start = this.w.start, end = this.w.end): PageText {
    const p = this.params(k, start, end)
    const joined = this.joined.all(p) as ExportRow[]
    const bytes = f.format === 'csv' ? f.csvJoinedBytes(joined) : f.jsonJoinedBytes(joined)
    if (bytes !== null) return pageText(bytes, joined)
    const rows = this.plain.all(p) as ExportRow[]
    return pageText(f.page(rows), rows)
  }

  /** How many calls the pager's window holds, up to `max` (a few milliseconds for tens of thousands, from the index). */
  countUpTo(max: number): number {
    const p = this.params(firstKeyset(this.w), this.w.start, this.w.end)
    delete p.afterTs
    delete p.afterId
    return this.db.prepare(exportCountSql(this.w, max)).pluck().get(p) as number
  }

  /** The time of the pager's window's last call in export order; undefined when it has none. */
  lastTs(): number | undefined {
    const p = this.params(firstKeyset(this.w), this.w.start, this.w.end)
    delete p.afterTs
    delete p.afterId
    return this.db.prepare(exportLastSql(this.w)).pluck().get(p) as number | undefined
  }

  /** The time of the pager's window's call at `offset` (0: the first) in export order; undefined past the last. */
  tsAt(offset: number): number | undefined {
    this.offsetTs ??= this.db.prepare(exportOffsetSql(this.w)).pluck()
    const p = this.params(firstKeyset(this.w), this.w.start, this.w.end)
    delete p.afterTs
    delete p.afterId
    return this.offsetTs.get({ ...p, offset }) as number | undefined
  }
}

/** Reads a page through the SQL seam (PostgreSQL): rows come as objects and are put in column order. */
export async function storePage(q: SqlReader, f: ExportFormatter, w: ExportWindow, k: Keyset, limit: number): Promise<PageText> {
  const objects = await q.all<Record<string, unknown>>(exportPageSql(q.dialect, w, limit), exportPageParams(w, k))
  const rows = objects.map((r) => EXPORT_COLUMNS.map((c) => r[c]))
  return pageText(f.page(rows), rows)
}
