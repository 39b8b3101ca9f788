import { z } from 'zod'
import type { BudgetAlert, BudgetMonitor } from '../budgets/types'
import { formatPct } from '../../shared/format'
import { machineTimeZone, sameTimeZone } from '../time/zone'
import { alertRuleId } from './alert-rule'
import { formatUsdOfLimit } from './money'

/** A desktop notification to show. */
export interface Notice {
  title: string
  body: string
  level: BudgetAlert['level']
}

/**
 * When the period resets, in the configured zone (where periods reset); that zone is named
 * (`Dec 1, 12:00 AM UTC`) when it is not this machine's, so the time is never read as local.
 */
function resetsText(iso: string, timezone: string, localZone: string): string {
  const d = new Date(iso)
  if (Number.isNaN(d.getTime())) return 'the next period'
  const named = sameTimeZone(timezone, localZone) ? {} : { timeZoneName: 'short' as const }
  return new Intl.DateTimeFormat('en-US', { timeZone: timezone, month: 'short', day: 'numeric', hour: 'numeric', minute: '2-digit', ...named }).format(d)
}

/**
 * The words of the notification for an alert; `timezone` is the configured one (when periods
 * reset), `localZone` this machine's.
 */
export function noticeFor(alert: BudgetAlert, timezone: string, localZone = machineTimeZone()): Notice {
  const [spent, limitUsd] = formatUsdOfLimit(alert.spent_usd, alert.limit_usd)
  const limit = `${limitUsd} ${alert.period} limit`
  const until = resetsText(alert.resets_at, timezone, localZone)
  if (alert.threshold_pct !== undefined && alert.level === 'warning') {
    return {
      level: 'warning',
      title: `Budget at ${formatPct(alert.threshold_pct)}: ${alert.api_key_pattern}`,
      body: `Key ${alert.key_hint} has spent ${spent} of its ${limit}. It resets ${until}.`,
    }
  }
  if (alert.level === 'blocking') {
    return {
      level: 'blocking',
      title: `Budget reached: ${alert.api_key_pattern}`,
      body: `Key ${alert.key_hint} reached its ${limit} (${spent} spent). Burnrate refuses its calls until ${until}.`,
    }
  }
  return {
    level: 'warning',
    title: `Budget warning: ${alert.api_key_pattern}`,
    body: `Key ${alert.key_hint} has spent ${spent} of its ${limit}. It resets ${until}.`,
  }
}

const entriesSchema = z.record(z.string(), z.string())

/**
 * Which notices were shown: once per rule, per period and per level, remembered across restarts
 * (a JSON file in userData) so quitting and starting again does not repeat them. A rule that
 * went straight to blocking does not also warn afterwards in that period.
 */
export class NoticeLog {
  /** id -> ISO time at which the period ends (entries are pruned after it). */
  private readonly entries: Map<string, string>

  constructor(entries: Record<string, string> = {}) {
    this.entries = new Map(Object.entries(entries))
  }

  /** Reads what a state file held; anything malformed counts as nothing shown. */
  static fromJSON(raw: unknown): NoticeLog {
    const parsed = entriesSchema.safeParse(raw)
    return new NoticeLog(parsed.success ? parsed.data : {})
  }

  private static id(a: BudgetAlert, level: BudgetAlert['level']): string {
    const threshold = a.threshold_pct !== undefined && level === a.level ? `\u0000${a.threshold_pct}` : ''
    return `${alertRuleId(a)}\u0000${a.period}\u0000${a.resets_at}\u0000${level}${threshold}`
  }

  /** True the first time this rule reaches this level in this period (and remembers it). */
  claim(alert: BudgetAlert, now = Date.now()): boolean {
    this.prune(now)
    if (this.entries.has(NoticeLog.id(alert, alert.level))) return false
    if (alert.level === 'warning' && this.entries.has(NoticeLog.id(alert, 'blocking'))) return false
    this.entries.set(NoticeLog.id(alert, alert.level), alert.resets_at)
    return true
  }

  private prune(now: number): void {
    for (const [id, end] of this.entries) {
      const t = Date.parse(end)
      if (!(t > now)) this.entries.delete(id)
    }
  }

  toJSON(): Record<string, string> {
    return Object.fromEntries(this.entries)
  }
}

export interface BudgetNotifierOptions {
  monitor: BudgetMonitor
  log: NoticeLog
  timezone: string
  show(notice: Notice): void
  /** Persists the log after it changed. */
  save(log: NoticeLog): void
  now?: () => number
}

/** Turns budget alerts into desktop notifications, each once per rule, period and level. */
export class BudgetNotifier {
  private off: (() => void) | null = null

  constructor(private readonly opts: BudgetNotifierOptions) {}

  start(): void {
    // Alerts already standing when the app starts (they fired before anyone listened).
    for (const a of this.opts.monitor.alerts()) this.handle(a)
    this.off = this.opts.monitor.onAlert((a) => this.handle(a))
  }

  private handle(alert: BudgetAlert): void {
    if (!this.opts.log.claim(alert, this.opts.now?.() ?? Date.now())) return
    try {
      this.opts.save(this.opts.log)
    } catch {
      // not remembering costs at most a repeated notice after a restart
    }
    this.opts.show(noticeFor(alert, this.opts.timezone))
  }

  stop(): void {
    this.off?.()
    this.off = null
  }
}
