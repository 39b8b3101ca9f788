import { createWriteStream } from 'node:fs'
import { Writable as NodeWritable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { Readable } from 'node:stream'
import { Option } from 'commander'
import type { RegisterCommand } from '.'
import { CliError, EXIT } from '../context'
import { parseWhen } from '../../report/report'
import type { SqlStore } from '../../storage/sql'
import { getJson, openLocalLedger, prepareLocal, resolveTarget, withTarget } from '../target'

/** `burnrate export`: every call of a window, as the dashboard's export gives it (CSV or JSON). */
export const exportCommand: RegisterCommand = (program, ctx) => {
  withTarget(
    program
      .command('export')
      .description('Every call of a window, oldest first, as CSV or JSON (the dashboard export\'s fields).')
      .addOption(new Option('--format <format>', 'output format').choices(['csv', 'json']).default('csv'))
      .option('--since <day>', 'from this day (YYYY-MM-DD) or ISO time (default: the beginning)')
      .option('--until <day>', 'up to and including this day, or up to this ISO time')
      .option('--tenant <id>', "only this tenant's calls")
      .option('-o, --output <file>', 'write to this file instead of stdout'),
  ).action(async (o) => {
    const t = await resolveTarget(o, ctx)
    const tz = t.config.timezone
    for (const name of ['since', 'until'] as const) {
      if (o[name] !== undefined && parseWhen(o[name], tz, name === 'until') === null) {
        throw new CliError(`--${name} must be a day (2026-11-20) or an ISO time; got ${JSON.stringify(o[name])}`, EXIT.usage)
      }
    }
    const sink: NodeJS.WritableStream = o.output
      ? createWriteStream(o.output, { mode: 0o600 })
      : new NodeWritable({ write: (chunk, _enc, cb) => (ctx.stdout.write(String(chunk)), cb()) })
    if (t.kind === 'http') {
      const p = new URLSearchParams({ format: o.format, since: o.since ?? '1970-01-01' })
      if (o.until) p.set('until', o.until)
      if (o.tenant) p.set('tenant', o.tenant)
      const r = await t.get(`/api/dashboard/export?${p}`)
      if (!r.ok || !r.body) {
        await getJson(t, `/api/dashboard/export?${p}`)
        throw new CliError(`${t.url} has no export API (its dashboard is off); run with --local`)
      }
      await pipeline(Readable.fromWeb(r.body as any), sink)
      return
    }
    await prepareLocal()
    const { CALL_COLUMNS, CSV_HEADER, csvLine, toCall } = await import('../../dashboard/calls')
    const ledger = await openLocalLedger(t)
    try {
      const where = ['ts >= @since', 'ts < @until']
      if (o.tenant) where.push('tenant = @tenant')
      const params = { since: o.since ? parseWhen(o.since, tz) : 0, until: o.until ? parseWhen(o.until, tz, true) : Number.MAX_SAFE_INTEGER, tenant: o.tenant }
      const rows = ledger.store.dialect === 'sqlite'
        ? ledger.db.prepare(`SELECT ${CALL_COLUMNS} FROM calls WHERE ${where.join(' AND ')} ORDER BY ts, id`).iterate(params)
        : pages(ledger.store, `SELECT ${CALL_COLUMNS}, id AS page_id FROM calls WHERE ${where.join(' AND ')}`, params)
      const csv = o.format === 'csv'
      async function* lines() {
        yield csv ? CSV_HEADER : '{"calls":['
        let first = true
        for await (const r of rows as AsyncIterable<any> | Iterable<any>) {
          yield csv ? csvLine(r) : (first ? '' : ',') + JSON.stringify(toCall(r))
          first = false
        }
        if (!csv) yield ']}\n'
      }
      await pipeline(Readable.from(lines()), sink)
    } finally {
      await ledger.close()
    }
  })
}

/** PostgreSQL: the calls in (ts, id) order, a page at a time (never the whole ledger in memory). */
async function* pages(store: SqlStore, select: string, params: Record<string, unknown>): AsyncGenerator<Record<string, unknown>> {
  const PAGE = 5000
  let after: { ts: number; id: number } | null = null
  for (;;) {
    const next = after ? ' AND (ts > @after_ts OR (ts = @after_ts AND id > @after_id))' : ''
    const rows: Record<string, unknown>[] = await store.all(`${select}${next} ORDER BY ts, id LIMIT ${PAGE}`, {
      ...params, after_ts: after?.ts, after_id: after?.id,
    })
    for (const r of rows) yield r
    if (rows.length < PAGE) return
    const last = rows[rows.length - 1]
    after = { ts: last.ts as number, id: last.page_id as number }
  }
}
