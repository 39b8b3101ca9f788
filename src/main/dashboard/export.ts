import type { ServerResponse } from 'node:http'
import type { Range } from '../../shared/api'
import { SqliteStore } from '../storage/sqlite'
import type { DashDeps } from './deps'
import { type ExportFormat, ExportFormatter } from './export-format'
import { type ExportWindow, type Keyset, type PageText, SqlitePager, firstKeyset, storePage } from './export-query'
import { exportThreadCount, exportThreadScript, streamFromThreads, worthThreads } from './export-thread'
import { rangeWindow } from './window'

/** Rows per page read on the main thread (a few milliseconds of work between other events). */
const PAGE = 2000
/** Rows per page on the export threads (off the event loop: bigger pages, fewer hand-overs). */
const THREAD_PAGE = 4000
/** Most segments an export is cut into for its threads (each costs a query even when it is empty). */
const MAX_SEGMENTS = 10_000

/**
 * Streams every call of the window, oldest first, as CSV or `{"calls":[...]}`. Rows are read in
 * keyset-paged chunks (no statement stays open between chunks, so the ledger keeps writing),
 * and the next chunk waits for the socket to drain: memory stays flat however many calls match.
 * The first page is read here (a small export never starts a thread); when many more calls follow
 * and the ledger is a SQLite file, the rest is read and formatted on export threads (./export-thread.ts)
 * while this thread only writes their buffers. Without them (run from the sources, PostgreSQL,
 * or a thread failed: then from after the last page written) every page is read here, one page
 * per turn of the event loop. The bytes are the same either way.
 */
export async function streamExport(
  d: DashDeps,
  res: ServerResponse,
  format: ExportFormat,
  range: Range,
  tenant: string | null,
  now: number,
  window?: { start: number; end: number },
  member: string | null = null,
): Promise<void> {
  const w = window ?? rangeWindow(range, now)
  const win: ExportWindow = { start: w.start, end: w.end, tenant, member }
  res.writeHead(200, {
    'content-type': format === 'csv' ? 'text/csv; charset=utf-8' : 'application/json; charset=utf-8',
    'content-disposition': `attachment; filename="burnrate-${range}.${format}"`,
    'cache-control': 'no-store',
  })
  let closed = false
  res.on('close', () => {
    closed = true
  })
  let text = new ExportFormatter(format)
  if (!(await write(res, text.head()))) return
  const read = pageReader(d, win, format)
  const file = ledgerFile(d)
  let threadFailed = false
  let keyset: Keyset = firstKeyset(win)
  for (;;) {
    if (closed) return
    const got = await read(text, keyset)
    if (got.keyset !== null) {
      keyset = got.keyset
      if (!(await write(res, got.text))) return
    }
    if (got.rows < PAGE) break
    const script = exportThreadScript()
    // The page's time span says how dense the calls are, so about how many are left.
    const perRow = Math.max(1, keyset.afterTs - (got.firstTs as number)) / got.rows
    const rest = Math.min(win.end, Date.now() + 1) - keyset.afterTs
    if (script !== null && file !== null && !threadFailed && worthThreads(rest / perRow)) {
      const threads = exportThreadCount()
      // One thread reads the rest in one segment; more share it in segments of about a thread's page each.
      const span = threads === 1 ? win.end - keyset.afterTs : Math.ceil(Math.max(perRow * THREAD_PAGE, rest / MAX_SEGMENTS, 1))
      const r = await streamFromThreads(script, { file, format, window: win, origin: keyset, span, limit: THREAD_PAGE }, threads, res)
      if (r.status === 'done') break
      if (r.status === 'closed') return
      // The threads could not go on: the rest is read here, from after the last page written.
      threadFailed = true
      keyset = r.keyset
      text = new ExportFormatter(format, true)
    }
    // One page per turn: proxied calls and other requests go between pages.
    await new Promise<void>((resolve) => setImmediate(resolve))
  }
  res.end(text.tail())
}

/** The ledger's SQLite file, when the export thread can open it (not in-memory, not PostgreSQL). */
function ledgerFile(d: DashDeps): string | null {
  return d.q instanceof SqliteStore && !d.q.db.memory && d.q.db.name !== '' ? d.q.db.name : null
}

/** Pages on this thread: raw arrays straight from better-sqlite3, or rows through the SQL seam (PostgreSQL). */
function pageReader(d: DashDeps, w: ExportWindow, format: ExportFormat): (f: ExportFormatter, k: Keyset) => Promise<PageText> {
  if (d.q instanceof SqliteStore) {
    const pager = new SqlitePager(d.q.db, w, PAGE, format)
    return async (f, k) => pager.page(f, k)
  }
  const q = d.q
  return (f, k) => storePage(q, f, w, k, PAGE)
}

/** Writes, then waits for the socket to drain if its buffer is full. False when the client left. */
function write(res: ServerResponse, chunk: string): Promise<boolean> {
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
