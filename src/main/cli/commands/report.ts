import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { Argument } from 'commander'
import type { RegisterCommand } from './types'
import { CliError, EXIT } from '../context'
import { RANKED_KINDS, REPORT_KINDS, REPORT_LIMIT, type Report, type ReportKind } from '../../report/report'
import { wholeNumber } from '../../dashboard/params'
import { localParts, startOfDay } from '../../time/zone'
import { compact, csvChunks, csvSum, jsonChunks, paint, usd, visible } from '../output'
import { stdoutSink } from '../stdout-sink'
import { tablePages } from '../table'
import { type Target, getJson, openLocalLedger, prepareLocal, resolveTarget, tenantOption, withTarget } from '../target'
import type { Unpriced, UnpricedModel } from '../../../shared/api'
import { unpricedMark } from '../../../shared/format'
import { syncLogs } from '../sync'
import { cliWindow } from '../window'

const KEY_LABEL: Record<ReportKind, string> = {
  daily: 'Day', weekly: 'Week of', monthly: 'Month', session: 'Session', model: 'Model', agent: 'Agent', project: 'Project',
}

/** `burnrate report <kind>`: spend per period or attribute, as a table, JSON or CSV. */
export const report: RegisterCommand = (program, ctx) => {
  withTarget(
    program
      .command('report')
      .description('Spend per day, week, month, session, model, agent or project.')
      .addArgument(new Argument('<kind>', 'how to group').choices(REPORT_KINDS))
      .option('--since <day>', 'from this day (YYYY-MM-DD, in the configured timezone) or ISO time')
      .option('--until <day>', 'up to and including this day, or up to this ISO time')
      .option('--tenant <id>', "only this tenant's calls", tenantOption)
      .option('--limit <n>', `session, model, agent and project reports: the costliest n rows (default ${REPORT_LIMIT.default})`)
      .option('--all', `session, model, agent and project reports: every row (up to ${REPORT_LIMIT.max.toLocaleString('en-US')})`)
      .option('--json', 'print JSON')
      .option('--csv', 'print CSV')
      .option('--no-import', "do not read the agents' logs first (when reading the ledger file)"),
  ).action(async (kind: ReportKind, o) => {
    if (o.json && o.csv) throw new CliError('choose one of --json and --csv', EXIT.usage)
    const { report: r, unpriced } = await fetchReport(kind, o, ctx)
    // A chunk at a time, waiting for a slow reader: `--all` may list 1,000,000 rows.
    const chunks = o.json ? jsonChunks({ ...r }, 'rows') : o.csv ? csvOf(r) : render(r, ctx.stdout, unpriced)
    await pipeline(Readable.from(chunks), stdoutSink(ctx.stdout))
    // A CSV has no room to say rows were left out: stderr says it, so a file made with `>` is not silently short.
    if (o.csv && leftOut(r)) ctx.stderr.write(`burnrate: ${leftOut(r)} (--all for every one)\n`)
  })
}

/** 'the costliest 100 of 148,894 sessions' when a limit left rows out, else ''. */
function leftOut(r: Report): string {
  // An older server's report has no total_rows: it listed every row.
  const all = r.total_rows ?? r.rows.length
  return all > r.rows.length ? `the costliest ${r.rows.length.toLocaleString('en-US')} of ${all.toLocaleString('en-US')} ${PLURAL[r.kind]}` : ''
}

/** The rows a report lists: `--limit`, `--all`, or the default; null for a daily, weekly or monthly report. */
function limitOf(kind: ReportKind, o: any): number | null {
  const ranked = RANKED_KINDS.includes(kind)
  if (o.limit !== undefined && o.all) throw new CliError('choose one of --limit and --all', EXIT.usage)
  if (!ranked) {
    if (o.limit !== undefined || o.all) throw new CliError(`--limit and --all apply to the ${RANKED_KINDS.join(', ')} reports; a ${kind} report lists every period`, EXIT.usage)
    return null
  }
  if (o.all) return REPORT_LIMIT.max
  if (o.limit === undefined) return REPORT_LIMIT.default
  const n = wholeNumber(o.limit, 1, REPORT_LIMIT.max)
  if (n === null) {
    throw new CliError(`--limit must be a whole number from 1 to ${REPORT_LIMIT.max}; got ${JSON.stringify(o.limit)}`, EXIT.usage)
  }
  return n
}

/**
 * The report, and for a table the models whose calls were recorded with no known price (at $0,
 * `priced: false`), which the table must not let read as free: the dashboard's unpriced list.
 */
async function fetchReport(kind: ReportKind, o: any, ctx: Parameters<RegisterCommand>[1]): Promise<{ report: Report; unpriced: UnpricedModel[] }> {
  const limit = limitOf(kind, o)
  const t = await resolveTarget(o, ctx)
  const tz = t.config.timezone
  const window = cliWindow(o, tz)
  const table = !o.json && !o.csv
  if (t.kind === 'http') {
    const report = await fetchServerReport(t, kind, o, limit)
    const tenant = o.tenant ? `?tenant=${encodeURIComponent(o.tenant)}` : ''
    const unpriced = table ? ((await getJson<Unpriced>(t, `/api/dashboard/unpriced${tenant}`))?.models ?? []) : []
    return { report, unpriced }
  }
  await prepareLocal()
  const { buildReport } = await import('../../report/report')
  const { reportZone } = await import('../../dashboard/rollup/report')
  const { unpriced } = await import('../../dashboard/unpriced')
  const ledger = await openLocalLedger(t)
  try {
    if (o.import !== false) await syncLogs(ledger.db, t.config, ctx, o, ledger.store)
    // The report rollup is the SQLite file's (PostgreSQL: every day summed from calls).
    const zone = ledger.store.dialect === 'sqlite' ? reportZone(ledger.db) : null
    const report = await buildReport(ledger.store, {
      kind,
      since: window.since,
      until: window.until,
      tenant: o.tenant ?? null,
      timezone: tz,
      limit,
    }, zone)
    return { report, unpriced: table ? (await unpriced({ q: ledger.store, tz }, o.tenant ?? null)).models : [] }
  } finally {
    await ledger.close()
  }
}

async function fetchServerReport(t: Extract<Target, { kind: 'http' }>, kind: ReportKind, o: any, limit: number | null): Promise<Report> {
  const p = new URLSearchParams({ kind })
  if (o.since) p.set('since', o.since)
  if (o.until) p.set('until', o.until)
  if (o.tenant) p.set('tenant', o.tenant)
  if (limit !== null) p.set('limit', String(limit))
  const r = await getJson<Report>(t, `/api/dashboard/report?${p}`)
  if (r) return r
  throw new CliError(`${t.url} has no report API (its dashboard is off, or it is an older Burnrate); run with --local`)
}

/**
 * The unpriced models a report's table must name: those whose unpriced calls (first to last) fall
 * in its window and that its rows name (any, when rows were left out: the totals are of all).
 * Their calls count as $0 in its amounts, which would read as free.
 */
function unpricedIn(r: Report, models: readonly UnpricedModel[]): UnpricedModel[] {
  const listed = new Set(r.rows.flatMap((x) => (r.kind === 'model' ? [x.key] : x.models)))
  const cut = leftOut(r) !== ''
  const since = r.since ? Date.parse(r.since) : -Infinity
  const until = r.until ? Date.parse(r.until) : Infinity
  return models.filter((m) => (cut || listed.has(m.model)) && Date.parse(m.last_seen_at) >= since && Date.parse(m.first_seen_at) < until)
}

const PLURAL: Record<ReportKind, string> = {
  daily: 'days', weekly: 'weeks', monthly: 'months', session: 'sessions', model: 'models', agent: 'agents', project: 'projects',
}

function keyOf(r: Report['rows'][number], kind: ReportKind): string {
  if (kind === 'model') return r.key || '(unknown)'
  if (kind === 'session') return (r.project ? `${r.project.split(/[\\/]/).pop()} ` : '') + (r.key || '(no session)')
  return r.key || `(no ${kind})`
}

/**
 * The day `YYYY-MM-DD` in `tz` that `ts` falls on. The report's `since` and `until` are UTC instants
 * (`until` the exclusive next midnight): the heading names the zone's days the user asked for, so
 * `until` is shown as the day of its last millisecond.
 */
function localDay(ts: number, tz: string): string {
  const p = localParts(ts, tz)
  return `${String(p.year).padStart(4, '0')}-${String(p.month).padStart(2, '0')}-${String(p.day).padStart(2, '0')}`
}

/**
 * A bound of the window as the heading shows it, in `tz`: the start of a day there as its day
 * (`until`, the exclusive start of the next, as its last day), any other time with its time,
 * `2026-12-06 09:30` (seconds and milliseconds when it has them), so a report of some hours never
 * reads as the day's. A day begins at its midnight, or where the clocks skip midnight (Chile's
 * 2026-09-06) at the change, 01:00: such a day was shown as "2026-09-06 01:00", and an `until` of
 * the day before as that time, a day the report does not hold.
 */
function localBound(ts: number, tz: string, end: boolean): string {
  const p = localParts(ts, tz)
  const ms = ((ts % 1000) + 1000) % 1000
  if (startOfDay(ts, tz) === ts) return localDay(end ? ts - 1 : ts, tz)
  const two = (n: number) => String(n).padStart(2, '0')
  const sec = p.second || ms ? `:${two(p.second)}${ms ? `.${String(ms).padStart(3, '0')}` : ''}` : ''
  return `${localDay(ts, tz)} ${two(p.hour)}:${two(p.minute)}${sec}`
}

function* render(r: Report, out: Parameters<typeof tablePages>[0], unpriced: readonly UnpricedModel[] = []): Generator<string> {
  const window = `${r.since ? localBound(Date.parse(r.since), r.timezone, false) : 'the beginning'} to ${r.until ? localBound(Date.parse(r.until), r.timezone, true) : 'now'}`
  const title = paint(out, 'bold', `Burnrate ${r.kind} report`) + ` (${window}, ${r.timezone}${r.tenant ? `, tenant ${visible(r.tenant)}` : ''})\n`
  if (r.rows.length === 0) {
    yield title + 'No calls in this window.\n'
    return
  }
  const head = [KEY_LABEL[r.kind], 'Calls', 'Input', 'Output', 'Cached', 'Cost']
  // A cost counting calls of no known price as $0 carries the dashboard's mark ('$1.20 + 3
  // unpriced', '$0.00 2 unpriced'), as `burnrate status` writes it: a lower bound, never free.
  // (An older server's report has no counts, and no mark.)
  const cost = (x: { cost_usd: number; unpriced_requests?: number }) => usd(x.cost_usd) + unpricedMark(x.unpriced_requests, x.cost_usd)
  const rows = r.rows.map((x) => [
    keyOf(x, r.kind), compact(x.requests), compact(x.input_tokens), compact(x.output_tokens), compact(x.cache_read_tokens), cost(x),
  ])
  const t = r.totals
  const footer = ['Total', compact(t.requests), compact(t.input_tokens), compact(t.output_tokens), compact(t.cache_read_tokens), cost(t)]
  let note = t.imported ? `${t.imported} of ${t.requests} calls were imported from the agents' logs.\n` : ''
  const cut = leftOut(r)
  if (cut) {
    // (Each line under 80 columns, even for 'The costliest 1,000,000 of 1,000,000,000 projects'.)
    note += `${cut[0].toUpperCase()}${cut.slice(1)} listed; the totals are of all.\n`
    note += `--limit n or --all lists more.\n`
  }
  const free = unpricedIn(r, unpriced)
  if (free.length) {
    // (A model name is whatever a client sent: printed through `visible`, as every name.)
    note += `Calls of ${free.length === 1 ? 'this model have' : 'these models have'} no known price and count as $0 here:\n`
    for (const m of free) note += visible(`  ${m.model} (${m.provider})`) + '\n'
  }
  if ((t.unpriced_requests ?? 0) > 0) note += 'Costs marked unpriced count calls of no known price as $0: lower bounds.\n'
  yield title
  yield* tablePages(out, head, rows, { footer })
  if (note) yield note
}

function csvOf(r: Report): Generator<string> {
  const head = ['key', 'requests', 'input_tokens', 'output_tokens', 'cache_read_tokens', 'cache_write_tokens', 'cost_usd', 'imported', 'models']
  if (r.kind === 'model') head.push('provider')
  if (r.kind === 'session') head.push('agent', 'project')
  // Last, so the columns before it keep their places; empty from an older server, which has no count.
  head.push('unpriced_requests')
  return csvChunks(head, r.rows, (x) => {
    const row: (string | number)[] = [x.key, x.requests, x.input_tokens, x.output_tokens, x.cache_read_tokens, x.cache_write_tokens, csvSum(x.cost_usd), x.imported, x.models.join(' ')]
    if (r.kind === 'model') row.push(x.provider ?? '')
    if (r.kind === 'session') row.push(x.agent ?? '', x.project ?? '')
    row.push(x.unpriced_requests ?? '')
    return row
  })
}
