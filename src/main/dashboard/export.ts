import type { ServerResponse } from 'node:http'
import type { Range } from '../../shared/api'
import type { Logger } from '../log'
import { PostgresStore, SnapshotsBusy } from '../storage/postgres'
import { SqliteStore } from '../storage/sqlite'
import { sendError } from '../http/errors'
import type { DashDeps } from './deps'
import { type ExportFormat, ExportFormatter } from './export-format'
import { atExportMoment } from './export-moment'
import { endWhenStalled } from './export-stall'
import { type ExportWindow, type Keyset, type PageText, SqlitePager, firstKeyset, storePage } from './export-query'
import { type ExportThreads, exportThreadCount, exportThreadScript, noteSharedExport, startExportThreads, threadRows } from './export-thread'
import { rangeWindow } from './window'

/** Rows per page read on the main thread (a few milliseconds of work between other events). */
const PAGE = 2000
/** Rows per page on the export threads (off the event loop: bigger pages, fewer hand-overs). */
const THREAD_PAGE = 4000
/** Most segments an export is cut into for its threads (each costs a query even when it is empty). */
const MAX_SEGMENTS = 10_000

/**
 * Streams every call of the window, oldest first, as CSV or `{"calls":[...]}`: the calls the
 * ledger held when the export began (atExportMoment), whatever is committed while it streams. Rows are read in
 * keyset-paged chunks (no statement stays open between chunks, so the ledger keeps writing; on
 * PostgreSQL they are read in one read-only transaction held for the export, which holds up no writer),
 * and the next chunk waits for the socket to drain: memory stays flat however many calls match. A
 * client that takes nothing for `dashboard.export_stall_ms` while staying connected has its export
 * ended (./export-stall.ts), so it holds no transaction, connection or thread for longer.
 * When the ledger is a SQLite file and the window holds many calls (counted from its index),
 * export threads (./export-thread.ts) read and format the calls from a split point on, started
 * at once: while they start, this thread reads and writes the calls before the split, then only
 * writes the threads' buffers. Otherwise (a small export, run from the sources, PostgreSQL, or a
 * thread failed: then from after the last page written) every page is read here, one page per
 * turn of the event loop. The bytes are the same either way.
 */
/** A window given by `since`/`until` instead of a range: its times, and its name for the download (see exportName). */
export interface ExportSpan {
  start: number
  end: number
  name: string
}

/**
 * The name of a download of the calls between `since` and `until` (either may be absent), as
 * given: `2026-11-01-to-2026-11-20`, `from-2026-11-01`, `to-2026-11-20`. A time loses its colons
 * (ISO 8601's basic form, `T183000Z`), which file systems refuse, and anything else that is not
 * a letter, digit, `.`, `+` or `-`, so the name never needs quoting.
 */
export function exportName(since: string | null, until: string | null): string {
  const safe = (v: string) => v.replace(/[^0-9A-Za-z.+-]/g, '')
  if (since !== null && until !== null) return `${safe(since)}-to-${safe(until)}`
  return since !== null ? `from-${safe(since)}` : `to-${safe(until ?? '')}`
}

/**
 * How long an export's client may take none of its bytes while staying connected
 * (`dashboard.export_stall_ms`) before the export is ended (./export-stall.ts), and where that is logged.
 */
export interface ExportStall {
  ms: number
  log: Logger
}

export async function streamExport(
  d: DashDeps,
  res: ServerResponse,
  format: ExportFormat,
  range: Range,
  tenant: string | null,
  now: number,
  span?: ExportSpan,
  member: string | null = null,
  stall?: ExportStall,
): Promise<void> {
  const w = span ?? rangeWindow(range, now)
  try {
    // The calls in the ledger now, before the first byte: nothing committed during the export is in it.
    await atExportMoment(d.q, (q, asOf) =>
      streamWindow({ ...d, q }, res, format, { start: w.start, end: w.end, tenant, member, asOf }, span?.name ?? range, stall && stallNote(d, stall, format, span?.name ?? range)),
    )
  } catch (err) {
    if (!(err instanceof SnapshotsBusy)) throw err
    // Thrown before the export took a connection: the ledger's writes keep the rest of the pool.
    sendError(
      res,
      'service_unavailable',
      `${err.limit === 1 ? 'An export is' : `${err.limit} exports are`} already running on this server (each holds a PostgreSQL connection for as long as it streams); try again when one has finished.`,
      undefined,
      { 'retry-after': String(BUSY_RETRY_S) },
    )
  }
}

/** Seconds a refused export is told to wait (SnapshotsBusy). */
const BUSY_RETRY_S = 10

/** The stall limit of an export of `d.q`, with the line it logs (once) when it ends one. */
function stallNote(d: DashDeps, stall: ExportStall, format: ExportFormat, name: string): { ms: number; onStall: () => void } {
  const freed = d.q instanceof PostgresStore ? ', giving back its snapshot transaction and database connection' : ''
  const s = Math.round(stall.ms / 100) / 10
  return {
    ms: stall.ms,
    onStall: () =>
      stall.log.warn(`dashboard: export stalled: the client of a ${format} export of ${name} took none of its bytes for ${s} s (dashboard.export_stall_ms) without hanging up; ended it mid-transfer${freed}`),
  }
}

/** streamExport's body: the window's calls at `win.asOf` (read through `d.q`, the export's own transaction on PostgreSQL). */
async function streamWindow(
  d: DashDeps,
  res: ServerResponse,
  format: ExportFormat,
  win: ExportWindow,
  name: string,
  stall?: { ms: number; onStall: () => void },
): Promise<void> {
  res.writeHead(200, {
    'content-type': format === 'csv' ? 'text/csv; charset=utf-8' : 'application/json; charset=utf-8',
    // Named after the window exported: the range, or the since/until that replaced it.
    'content-disposition': `attachment; filename="burnrate-${name}.${format}"`,
    'cache-control': 'no-store',
  })
  // A client that takes nothing for `stall.ms` has its export ended: 'close' then ends this one's reading.
  const unwatch = stall ? endWhenStalled(res, stall.ms, stall.onStall) : () => {}
  try {
    await streamPages(d, res, format, win)
  } finally {
    unwatch()
  }
}

/** The export's bytes, head to tail, each page once the socket has taken the last (or until the client is gone). */
async function streamPages(d: DashDeps, res: ServerResponse, format: ExportFormat, win: ExportWindow): Promise<void> {
  let closed = false
  res.on('close', () => {
    closed = true
  })
  let text = new ExportFormatter(format)
  if (!(await write(res, text.head()))) return
  const pager = d.q instanceof SqliteStore ? new SqlitePager(d.q.db, win, PAGE) : null
  const read = pageReader(d, pager, win)
  let threads = pager === null ? null : handToThreads(d, pager, win, format, res)
  try {
    // This thread reads the calls before the split (all of them without threads).
    let end = threads?.split ?? win.end
    let keyset: Keyset = firstKeyset(win)
    for (;;) {
      if (closed) return
      const got = await read(text, keyset, end)
      if (got.keyset !== null) {
        keyset = got.keyset
        if (!(await write(res, got.text))) return
      }
      if (got.rows < PAGE) {
        if (threads === null) break
        threads.release()
        const r = await threads.outcome
        threads = null
        if (r.status === 'done') break
        if (r.status === 'closed') return
        // The threads could not go on: the rest is read here, from after the last page written
        // (by them, or before the split by this thread: the window's first calls are written).
        keyset = r.keyset
        end = win.end
        text = new ExportFormatter(format, true)
      }
      // One page per turn: proxied calls and other requests go between pages.
      await new Promise<void>((resolve) => setImmediate(resolve))
    }
  } finally {
    // This thread's part failed or its client left: the threads stop too.
    threads?.cancel()
  }
  res.end(text.tail())
}

/**
 * Starts threads on the window's calls from a split point on, when the ledger is a SQLite file,
 * the built thread is there and the window holds at least `threadRows().min` calls (fewer when
 * threads are idle): the split is the time of the call `threadRows().main` calls in (the calls
 * before it are this thread's; all the calls at that time and after are the threads'), or, for an
 * export of fewer than `threadRows().share` calls with the threads idle, the call a `threads + 1`th
 * of them in (shared evenly). Null when this thread reads them all.
 */
function handToThreads(d: DashDeps, pager: SqlitePager, win: ExportWindow, format: ExportFormat, res: ServerResponse): (ExportThreads & { split: number }) | null {
  const script = exportThreadScript()
  const file = ledgerFile(d)
  if (script === null || file === null) return null
  const threads = exportThreadCount()
  const rows = threadRows(script, threads)
  if (rows.min > 0 && pager.tsAt(rows.min - 1) === undefined) return null
  let main = rows.main
  let ahead: number | undefined
  if (rows.share > 0) {
    const count = pager.countUpTo(rows.share)
    if (count < rows.share) {
      // Shared evenly (SHARE_MAX_ROWS): this thread reads its part while the threads read theirs, all of it ahead.
      main = Math.max(main, Math.floor(count / (threads + 1)))
      ahead = Math.ceil((count - main) / THREAD_PAGE) + 1
    }
  }
  const first = pager.tsAt(0)
  const split = pager.tsAt(main)
  // No calls after the main thread's share, or all of its share at one time as the split: no split to make.
  if (first === undefined || split === undefined || split <= first) return null
  // After every call before the split (ids are integers below 2^53).
  const origin: Keyset = { afterTs: split - 1, afterId: Number.MAX_SAFE_INTEGER }
  // One thread reads the rest in one segment; more share it in segments of about a thread's page each
  // (the main thread's share says how dense the calls are).
  const perRow = (split - first) / Math.max(1, main)
  // The threads' share ends after the window's last call as of the export's start (no call
  // committed later is read): an open end (OPEN_END) or one far ahead is not cut into millions of
  // empty segments.
  const stop = Math.min(win.end, (pager.lastTs() ?? split) + 1)
  const rest = stop - origin.afterTs
  const span = threads === 1 ? rest : Math.ceil(Math.max(perRow * THREAD_PAGE, rest / MAX_SEGMENTS, 1))
  if (ahead !== undefined) noteSharedExport()
  const window = { ...win, end: stop }
  return { split, ...startExportThreads(script, { file, format, window, origin, span, limit: THREAD_PAGE }, threads, res, ahead) }
}

/** The ledger's SQLite file, when the export thread can open it (not in-memory, not PostgreSQL). */
function ledgerFile(d: DashDeps): string | null {
  return d.q instanceof SqliteStore && !d.q.db.memory && d.q.db.name !== '' ? d.q.db.name : null
}

/** Pages on this thread of `[w.start, end)`: raw arrays straight from better-sqlite3, or rows through the SQL seam (PostgreSQL). */
function pageReader(d: DashDeps, pager: SqlitePager | null, w: ExportWindow): (f: ExportFormatter, k: Keyset, end: number) => Promise<PageText> {
  if (pager !== null) return async (f, k, end) => pager.page(f, k, w.start, end)
  const q = d.q
  return (f, k, end) => storePage(q, f, { ...w, end }, k, PAGE)
}

/** Writes, then waits for the socket to drain if its buffer is full. False when the client left. */
function write(res: ServerResponse, chunk: string | Uint8Array): Promise<boolean> {
  if (res.destroyed) return Promise.resolve(false)
  if (res.write(chunk)) return Promise.resolve(true)
  return new Promise((resolve) => {
    const done = (ok: boolean) => {
      res.off('drain', onDrain)
      res.off('close', onClose)
      resolve(ok)
    }
    const onDrain = () => done(true)
    const onClose = () => done(false)
    res.on('drain', onDrain)
    res.on('close', onClose)
  })
}
