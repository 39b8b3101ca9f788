import type { BudgetAlert, BudgetLevel } from '../budgets/types'
import type { PlanAccount } from '../../shared/api'
import { unpricedMark } from '../../shared/format'
import { alertRuleId } from './alert-rule'
import { formatUsd, formatUsdOfLimit } from './money'
import { clock, planLine, planShort } from './tray-plans'

/** What the tray shows; the Electron adapter only copies these strings onto the Tray. */
export interface TrayView {
  /** The menu-bar title beside the icon on macOS (drawn with monospaced digits); '' elsewhere. */
  title: string
  /** The hover text (Windows caps it at 127 characters). */
  tooltip: string
  /** The first, disabled menu item: today's spend. */
  headline: string
  /**
   * A disabled item while some of today's calls are of models with no known price (counted as $0,
   * so the amount is a lower bound, shown with a `+`), else null.
   */
  unpricedLine: string | null
  /** A second disabled item while a budget is at its warning level or blocking, else null. */
  budgetLine: string | null
  /** The fullest plan window (`5h 43% · resets 14:20`), or null without plan windows. */
  planLine: string | null
  /** Which icon to show. */
  icon: BudgetLevel
}

export interface TrayInput {
  /** Today's spend in USD, or null while it cannot be read (an attached server that stopped answering). */
  todayUsd: number | null
  /** With todayUsd null: the attached server answers but refuses the dashboard token (not a server that is down). */
  refused?: boolean
  /** The status of the attached server's error answer to the summary (a 500), other than a refused token; null or absent: none. */
  errorStatus?: number | null
  /** Of today's calls, those billed per token whose model has no known price (counted as $0 in todayUsd). */
  unpricedToday?: number
  alerts: readonly BudgetAlert[]
  /**
   * When `alerts` were read, while they could not be renewed since (the attached server's budgets
   * answered with an error, or nothing): the budget line says so. Null or absent: they are current.
   */
  budgetsReadAt?: number | null
  platform: NodeJS.Platform
  /** Today's spend projected to midnight at the current pace (README: the forecast), when known. */
  projectedUsd?: number | null
  /** Plan windows (GET /api/dashboard/plans' accounts); none when absent. */
  plans?: readonly PlanAccount[]
  now?: number
  /** Zone of the reset times shown (default: this machine's). */
  timeZone?: string
}

const TOOLTIP_MAX = 127

/** The worst level among the alerts: any blocking rule makes the tray "blocking". */
export function budgetLevel(alerts: readonly BudgetAlert[]): BudgetLevel {
  let level: BudgetLevel = 'ok'
  for (const a of alerts) {
    if (a.level === 'blocking') return 'blocking'
    level = 'warning'
  }
  return level
}

function describeAlerts(alerts: readonly BudgetAlert[]): string | null {
  if (alerts.length === 0) return null
  // One line per rule and period: several keys under one `*` rule are one budget to a person.
  const byRule = new Map<string, BudgetAlert>()
  for (const a of alerts) {
    const id = `${alertRuleId(a)}\u0000${a.period}`
    const seen = byRule.get(id)
    if (!seen || (seen.level === 'warning' && a.level === 'blocking') || (seen.level === a.level && a.spent_usd / a.limit_usd > seen.spent_usd / seen.limit_usd)) {
      byRule.set(id, a)
    }
  }
  const list = [...byRule.values()]
  if (list.length === 1) {
    const a = list[0]
    const verb = a.level === 'blocking' ? 'Blocking' : 'Warning'
    const [spent, limit] = formatUsdOfLimit(a.spent_usd, a.limit_usd)
    // Calls of no known price in the window count as $0: its spend is marked a lower bound, as the dashboard marks it.
    return `${verb}: ${a.api_key_pattern} ${a.period} ${spent}${unpricedMark(a.unpriced_requests, a.spent_usd)} of ${limit}`
  }
  const blocking = list.filter((a) => a.level === 'blocking').length
  const warning = list.length - blocking
  const parts: string[] = []
  if (blocking) parts.push(`${blocking} ${blocking === 1 ? 'budget' : 'budgets'} blocking`)
  if (warning) parts.push(`${warning} at warning level`)
  return parts.join(', ')
}

/** The tooltip's first line when the attached server answers 401/403 to the tray's dashboard requests. */
export const TOKEN_REFUSED = 'Burnrate: the server answers but refuses the dashboard token (dashboard.token in config.yaml)'

/**
 * The menu line saying that today's amount leaves out calls of no known price, as the dashboard's
 * `+ 3 unpriced` mark does (README: Unpriced calls in the spend figures); null when there are none.
 */
export function unpricedLine(calls: number): string | null {
  if (!(calls > 0)) return null
  return `${calls} ${calls === 1 ? 'call today has' : 'calls today have'} no price: see the dashboard's Unpriced models`
}

/** The tooltip's first line when the attached server answers the tray's summary request with another error: it runs, so never "not answering". */
export function serverErrorLine(status: number): string {
  return status >= 500 ? `Burnrate: server error (HTTP ${status}) reading today’s spend` : `Burnrate: the server answered HTTP ${status} to the request for today’s spend`
}

export function trayView({
  todayUsd, alerts, platform, projectedUsd, plans = [], now = Date.now(), timeZone, refused = false, errorStatus = null, unpricedToday = 0, budgetsReadAt = null,
}: TrayInput): TrayView {
  const unpriced = todayUsd === null ? null : unpricedLine(unpricedToday)
  // With calls of no known price counted as $0, the amount is a lower bound: "$1.20+", never a plain "$0.00".
  const more = unpriced ? '+' : ''
  const amount = todayUsd === null ? '—' : formatUsd(todayUsd) + more
  // Levels that could not be read again are kept (a block stands until its reset), marked with when they were read.
  const described = describeAlerts(alerts)
  const budgetLine = described && budgetsReadAt !== null ? `${described} (last read ${clock(new Date(budgetsReadAt).toISOString(), now, timeZone).text})` : described
  const unread = refused ? TOKEN_REFUSED : errorStatus !== null ? serverErrorLine(errorStatus) : 'Burnrate: server not answering'
  let tooltip = todayUsd === null ? unread : `Burnrate: ${amount} today`
  // The budget line right after the spend: the cut to what Windows shows takes the last lines, and
  // a key refused its calls must not be what it takes (it came last, after the lines below).
  if (budgetLine) tooltip += `\n${budgetLine}`
  if (unpriced) tooltip += `\n${unpriced}`
  if (todayUsd !== null && todayUsd > 0 && projectedUsd != null && projectedUsd > todayUsd) tooltip += `\nOn pace for ${formatUsd(projectedUsd)}${more} by midnight`
  const plan = planLine(plans, now, timeZone)
  if (plan) tooltip += `\n${plan}`
  if (tooltip.length > TOOLTIP_MAX) tooltip = tooltip.slice(0, TOOLTIP_MAX - 1) + '…'
  return {
    title: platform === 'darwin' ? [amount, planShort(plans, now)].filter(Boolean).join(' · ') : '',
    tooltip,
    headline: todayUsd === null && refused ? `Today: ${amount} (dashboard token refused)` : todayUsd === null && errorStatus !== null ? `Today: ${amount} (${errorStatus >= 500 ? 'server error' : `HTTP ${errorStatus}`})` : `Today: ${amount}`,
    unpricedLine: unpriced,
    budgetLine,
    planLine: plan,
    icon: budgetLevel(alerts),
  }
}
