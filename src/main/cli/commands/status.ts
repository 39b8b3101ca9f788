import type { RegisterCommand } from './types'
import type { Writable } from '../context'
import type { Summary } from '../../../shared/api'
import { formatInt, formatPct, formatUsdPair, unpricedMark } from '../../../shared/format'
import { paint, usd, visible } from '../output'
import { getJson, openLocalLedger, prepareLocal, resolveTarget, tenantOption, withTarget } from '../target'
import { syncLogs } from '../sync'
import { dataDirHolder } from '../../server/data-lock'

interface Status {
  source: string
  summary: Summary
  budgets: unknown[] | null
  plans: unknown[] | null
  ledger: Record<string, unknown>
}

/** `burnrate status`: today's and this month's spend, budgets, plan windows and ledger health. */
export const status: RegisterCommand = (program, ctx) => {
  withTarget(
    program
      .command('status')
      .description("Today's and this month's spend, budgets with their forecast, plan windows, ledger health.")
      .option('--tenant <id>', "only this tenant's spend", tenantOption)
      .option('--json', 'print JSON')
      .option('--no-import', "do not read the agents' logs first (when reading the ledger file)"),
  ).action(async (o) => {
    const s = await collect(o, ctx)
    if (o.json) {
      ctx.stdout.write(JSON.stringify(s, null, 2) + '\n')
      return
    }
    const out = ctx.stdout
    const m = s.summary
    // Calls of a model with no known price count as $0: an amount holding some is marked as the
    // dashboard marks it ('$1.20 + 3 unpriced'), a lower bound, and a line under the figures says so.
    let lowerBound = m.today_unpriced_requests > 0 || m.month_unpriced_requests > 0
    const lines = [
      paint(out, 'bold', 'Burnrate') + ` (${s.source})`,
      `Today       ${usd(m.today_spend_usd)}${unpricedMark(m.today_unpriced_requests, m.today_spend_usd)} in ${formatInt(m.today_requests)} calls (${formatPct(m.error_rate)} failed)`,
      `This month  ${usd(m.month_spend_usd)}${unpricedMark(m.month_unpriced_requests, m.month_spend_usd)}`,
      `Sessions    ${formatInt(m.active_sessions)} active`,
    ]
    if (s.budgets === null) lines.push(`Budgets     shown by a running Burnrate${o.local ? ' (without --local)' : ''}`)
    else if (s.budgets.length === 0) lines.push('Budgets     none')
    else {
      lines.push('Budgets')
      for (const b of s.budgets as any[]) {
        // Limits are per key: a rule's line names the key it is about, and what else the rule is limited to.
        // (An exact-key rule's pattern comes masked as the key's hint already.)
        const pattern: string = b.rule?.api_key_pattern ?? '?'
        // (A key hint is made of what a caller sent: printed through `visible`, as every name.)
        const name = visible([pattern, b.key_hint && b.key_hint !== pattern ? `(${b.key_hint})` : '', scopeOf(b.rule)].filter(Boolean).join(' '))
        for (const w of b.windows ?? []) {
          // A window counting calls of no known price: its spend, share and projection are at least what they read.
          const mark = unpricedMark(w.unpriced_requests, w.spent_usd)
          if (mark) lowerBound = true
          const atLeast = mark ? 'at least ' : ''
          const proj = w.projected_usd != null ? `, projected ${atLeast}${usd(w.projected_usd)}` : ''
          const pct = atLeast + formatPct(w.pct ?? 0)
          // As the dashboard's bars: a spend and its limit that differ never read the same ($9.996 of $10.00).
          const [spent, limit] = formatUsdPair(w.spent_usd, w.limit_usd)
          const line = `  ${name} ${w.period}: ${spent}${mark} of ${limit} (${pct}${proj})`
          lines.push((w.pct ?? 0) >= 1 ? paint(out, 'red', line) : (w.pct ?? 0) >= 0.8 ? paint(out, 'yellow', line) : line)
        }
      }
    }
    if (s.plans && s.plans.length) {
      lines.push('Plan windows')
      for (const a of s.plans as any[]) {
        for (const w of a.windows ?? []) lines.push(visible(`  ${a.provider} ${a.account_hint ?? ''} ${w.name}`) + `: ${formatPct(w.utilization ?? 0)} used`)
      }
    }
    if (lowerBound) lines.push("Unpriced    calls with no known price count as $0: marked amounts are lower bounds")
    lines.push(ledgerLine(out, s.ledger))
    out.write(lines.join('\n') + '\n')
  })
}

/**
 * The ledger's health on one line: why its database cannot be written (the health's `last_error`),
 * and its dropped calls split as the health splits them: past `ledger.max_pending` (`overflowed`,
 * which a bigger bound would have kept) and the others (a row the database refused: the log says
 * why). A server before `overflowed` gives the count alone.
 */
function ledgerLine(out: Writable, l: Record<string, any>): string {
  const why = typeof l.last_error === 'string' && l.last_error ? ` (${visible(l.last_error)})` : ''
  const state = l.writable === false ? paint(out, 'red', `NOT WRITABLE${why}`) : 'ok'
  let dropped = ''
  if (l.dropped) {
    const over = typeof l.overflowed === 'number' ? Math.min(l.overflowed, l.dropped) : null
    const parts = over === null ? [] : [over > 0 ? `${over} past ledger.max_pending` : '', l.dropped - over > 0 ? `${l.dropped - over} otherwise: the log says why` : ''].filter(Boolean)
    dropped = `, ${l.dropped} dropped${parts.length ? ` (${parts.join(', ')})` : ''}`
  }
  return `Ledger      ${state}${l.pending ? `, ${l.pending} pending` : ''}${dropped}${l.calls !== undefined ? `, ${l.calls} calls` : ''}${l.file ? ` (${l.file})` : ''}`
}

/** What a rule is limited to besides its keys, as `[agent claude-code, model gpt-5*]`; '' when nothing. */
function scopeOf(rule: Record<string, unknown> | undefined): string {
  if (!rule) return ''
  const parts: string[] = []
  for (const [field, label] of [['provider', 'provider'], ['model_pattern', 'model'], ['agent', 'agent'], ['tenant', 'tenant']] as const) {
    const v = rule[field]
    if (typeof v === 'string' && v) parts.push(`${label} ${v}`)
  }
  return parts.length ? `[${parts.join(', ')}]` : ''
}

async function collect(o: any, ctx: Parameters<RegisterCommand>[1]): Promise<Status> {
  const t = await resolveTarget(o, ctx)
  const tenant = o.tenant ? `?tenant=${encodeURIComponent(o.tenant)}` : ''
  if (t.kind === 'http') {
    // Spend and budgets both of the tenant asked for (plan windows are the provider accounts', not a tenant's).
    const [summary, budgets, plans] = await Promise.all([
      getJson<Summary>(t, `/api/dashboard/summary${tenant}`),
      getJson<any>(t, `/api/dashboard/budgets${tenant}`),
      getJson<any>(t, '/api/dashboard/plans'),
    ])
    if (!summary) throw new Error(`${t.url} has its dashboard turned off; run with --local`)
    // The ledger's health is the answer that found the server (asked once).
    const health = t.health
    return { source: t.url, summary, budgets: budgets?.rules ?? null, plans: plans?.accounts ?? null, ledger: { status: health.status, ...health.ledger } }
  }
  await prepareLocal()
  const { summary } = await import('../../dashboard/summary')
  const ledger = await openLocalLedger(t)
  try {
    if (o.import !== false) await syncLogs(ledger.db, t.config, ctx, o, ledger.store)
    const s = await summary({ q: ledger.store, tz: t.config.timezone }, o.tenant ?? null, Date.now())
    const calls = (await ledger.store.get<{ n: number }>('SELECT count(*) AS n FROM calls'))!.n
    // Read with --local (or a server too busy to answer) beside the Burnrate that holds the folder: say so, not "none running".
    const holder = dataDirHolder(t.config.data_dir)
    const source = holder
      ? o.local
        ? `ledger file, read with --local; the Burnrate at ${holder.url} serves this folder`
        : `ledger file; the Burnrate at ${holder.url} serves this folder but did not answer`
      : t.config.storage.url
        ? `${ledger.where}, no server running here`
        : 'ledger file, no server running'
    return { source, summary: s, budgets: null, plans: null, ledger: { writable: true, calls, file: ledger.where } }
  } finally {
    await ledger.close()
  }
}
