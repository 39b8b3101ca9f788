import { z } from 'zod'
import type { BudgetAlert, BudgetMonitor } from '../budgets/types'
import { formatPct, unpricedMark } from '../../shared/format'
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
  const [amount, limitUsd] = formatUsdOfLimit(alert.spent_usd, alert.limit_usd)
  // Calls of no known price in the window count as $0: the spend is marked a lower bound ('$8.00 + 2 unpriced'), and why.
  const mark = unpricedMark(alert.unpriced_requests, alert.spent_usd)
  const spent = amount + mark
  const limit = `${limitUsd} ${alert.period} limit`
  const note = mark ? ' Calls with no known price count as $0 in it: the real spend is more.' : ''
  const until = resetsText(alert.resets_at, timezone, localZone)
  if (alert.threshold_pct !== undefined && alert.level === 'warning') {
    return {
      level: 'warning',
      title: `Budget at ${formatPct(alert.threshold_pct)}: ${alert.api_key_pattern}`,
      body: `Key ${alert.key_hint} has spent ${spent} of its ${limit}.${note} It resets ${until}.`,
    }
  }
  if (alert.level === 'blocking') {
    return {
      level: 'blocking',
      title: `Budget reached: ${alert.api_key_pattern}`,
      body: `Key ${alert.key_hint} reached its ${limit} (${spent} spent).${note} Burnrate refuses its calls until ${until}.`,
    }
  }
  return {
    level: 'warning',
    title: `Budget warning: ${alert.api_key_pattern}`,
    body: `Key ${alert.key_hint} has spent ${spent} of its ${limit}.${note} It resets ${until}.`,
  }
}

const entriesSchema = z.record(z.string(), z.string())

/**
 * Which notices were shown: once per rule, period, limit and level, remembered across restarts
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

  /**
   * The limit is part of it, as of the server's crossings: a limit raised in a period is reached
   * anew, and told. A calendar period by its reset. A rolling window's reset moves with its calls, so a window is
   * one: its entry is kept until the level can have fallen (its latest reset, at which the spend is
   * under the limit at the latest when no call came since), never until a new crossing.
   */
  private static id(a: BudgetAlert, level: BudgetAlert['level']): string {
    const threshold = a.threshold_pct !== undefined && level === a.level ? `\u0000${a.threshold_pct}` : ''
    return `${alertRuleId(a)}\u0000${a.period}\u0000${a.period === 'window' ? '' : a.resets_at}\u0000${a.limit_usd}\u0000${level}${threshold}`
  }

  /** True the first time this rule reaches this level in this period (and remembers it). */
  claim(alert: BudgetAlert, now = Date.now()): boolean {
    this.prune(now)
    if (this.extend(alert, NoticeLog.id(alert, alert.level))) return false
    if (alert.level === 'warning' && this.extend(alert, NoticeLog.id(alert, 'blocking'))) return false
    this.entries.set(NoticeLog.id(alert, alert.level), alert.resets_at)
    return true
  }

  /**
   * Keeps a window's level still standing (told when it was reached, by then) as told until its
   * reset as it is now: calls since moved it on, and a restart before then must find it told.
   */
  keep(alert: BudgetAlert): void {
    if (alert.period !== 'window') return
    const id = NoticeLog.id(alert, alert.level)
    if (!this.extend(alert, id)) this.entries.set(id, alert.resets_at)
  }

  /** Whether `id` was told; a window's entry then lasts until the alert's reset, if that is later. */
  private extend(alert: BudgetAlert, id: string): boolean {
    const end = this.entries.get(id)
    if (end === undefined) return false
    if (alert.period === 'window' && Date.parse(alert.resets_at) > Date.parse(end)) this.entries.set(id, alert.resets_at)
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
  /**
   * Resolves when `monitor.alerts()` reads as it is to be told (the own server's counts of calls of
   * no known price, first read: ./budget-unpriced.ts); the alerts standing at start wait for it.
   */
  ready?: Promise<void>
}

/** Turns budget alerts into desktop notifications, each once per rule, period and level. */
export class BudgetNotifier {
  private off: (() => void) | null = null

  constructor(private readonly opts: BudgetNotifierOptions) {}

  start(): void {
    // Alerts already standing when the app starts (they fired before anyone listened): once the
    // monitor is ready (`ready`), those raised meanwhile told as they come.
    const standing = () => {
      for (const a of this.opts.monitor.alerts()) this.handle(a)
    }
    if (!this.opts.ready) standing()
    this.off = this.opts.monitor.onAlert((a) => this.handle(a))
    void this.opts.ready?.then(() => this.off && standing())
  }

  private handle(alert: BudgetAlert): void {
    const first = this.opts.log.claim(alert, this.opts.now?.() ?? Date.now())
    // Saved either way: a window crossing told before may have had its reset moved on.
    this.save()
    if (first) this.opts.show(noticeFor(alert, this.opts.timezone))
  }

  private save(): void {
    try {
      this.opts.save(this.opts.log)
    } catch {
      // not remembering costs at most a repeated notice after a restart
    }
  }

  /** Stops, remembering the window crossings still standing until their resets as they are now. */
  stop(): void {
    this.off?.()
    this.off = null
    try {
      const windows = this.opts.monitor.alerts().filter((a) => a.period === 'window')
      for (const a of windows) this.opts.log.keep(a)
      if (windows.length > 0) this.save()
    } catch {
      // the budget state cannot be read: the entries stay as they were
    }
  }
}
