import type { ServerResponse } from 'node:http'
import type { Range } from '../../shared/api'
import { CALL_COLUMNS, CSV_HEADER, CsvFormatter, toCall, type CallRow } from './calls'
import type { DashDeps } from './deps'
import { andMember, indexedBy } from './sql'
import { rangeWindow } from './window'

/** Rows read per query; each chunk is one `res.write`. */
const CHUNK = 2000

/**
 * Streams every call of the window, oldest first, as CSV or `{"calls":[...]}`. Rows are read in
 * keyset-paged chunks (no statement stays open between chunks, so the ledger keeps writing),
 * and the next chunk waits for the socket to drain: memory stays flat however many calls match.
 */
export async function streamExport(
  d: DashDeps,
  res: ServerResponse,
  format: 'csv' | 'json',
  range: Range,
  tenant: string | null,
  now: number,
  window?: { start: number; end: number },
  member: string | null = null,
): Promise<void> {
  const w = window ?? rangeWindow(range, now)
  const index = member !== null ? 'calls_member_ts' : tenant === null ? 'calls_ts' : 'calls_tenant_ts'
  const sql = `SELECT ${CALL_COLUMNS} FROM calls${indexedBy(d.q, index)}
    WHERE ts >= @from AND ts < @end${tenant === null ? '' : ' AND tenant = @tenant'}${andMember(member)}
      AND (ts > @afterTs OR id > @afterId)
    ORDER BY ts, id LIMIT ${CHUNK}`
  const csv = format === 'csv'
  res.writeHead(200, {
    'content-type': csv ? 'text/csv; charset=utf-8' : 'application/json; charset=utf-8',
    'content-disposition': `attachment; filename="burnrate-${range}.${format}"`,
    'cache-control': 'no-store',
  })
  let closed = false
  res.on('close', () => {
    closed = true
  })
  let first = true
  const lines = new CsvFormatter()
  if (!(await write(res, csv ? CSV_HEADER : '{"calls":['))) return
  let afterTs = w.start - 1
  let afterId = 0
  for (;;) {
    if (closed) return
    const rows = await d.q.all<CallRow>(sql, { from: Math.max(w.start, afterTs), end: w.end, tenant, afterTs, afterId, member })
    if (rows.length === 0) break
    let out = ''
    if (csv) {
      for (const r of rows) out += lines.csv(r)
    } else {
      for (const r of rows) {
        out += (first ? '' : ',') + JSON.stringify(toCall(r))
        first = false
      }
    }
    const last = rows[rows.length - 1]
    afterTs = last.ts
    afterId = last.id
    if (!(await write(res, out))) return
    if (rows.length < CHUNK) break
  }
  if (!csv) res.write(']}')
  res.end()
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
