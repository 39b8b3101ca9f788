import type { BudgetAlert, BudgetMonitor } from '../budgets/types'
import type { SpendSource } from './spend-source'
import { Throttle, type Timers, realTimers } from './throttle'
import type { PlanSource } from './tray-plans'
import { type TrayView, trayView } from './tray-view'

export interface TrayPresenterOptions {
  spend: SpendSource
  /**
   * Budget state (this process's, or an attached server's); null when there is none. `staleSince`:
   * while its state could not be renewed (the attached server's budgets went unanswered), when it was read.
   */
  budgets: (BudgetMonitor & { staleSince?(): number | null }) | null
  /** Plan windows in this process; null or absent when there are none (attached). */
  plans?: PlanSource | null
  platform: NodeJS.Platform
  /** Draws the view on the tray (the Electron adapter). Called only when something changed. */
  render(view: TrayView): void
  /** At most one render per interval; never later than this after a change. */
  intervalMs?: number
  /** Also refreshes this often, so "today" rolls over at midnight without a call. */
  refreshMs?: number
  timers?: Timers
  /** Today's spend projected to the end of the day at the current pace (the tooltip's forecast). */
  paceOf?: (todayUsd: number, now: number) => number
}

/** Keeps the tray in step with the spend and budget state, throttled. */
export class TrayPresenter {
  private readonly throttle: Throttle
  private readonly offs: (() => void)[] = []
  private last = ''
  private tick: unknown = null
  /** A redraw at the earliest budget level's or plan window's reset, so it goes then, not at the next refresh. */
  private resetTick: unknown = null
  private readonly timers: Timers
  view: TrayView | null = null

  constructor(private readonly opts: TrayPresenterOptions) {
    this.timers = opts.timers ?? realTimers
    this.throttle = new Throttle(() => this.draw(), opts.intervalMs ?? 1000, this.timers)
  }

  start(): void {
    this.draw()
    this.offs.push(this.opts.spend.subscribe(() => this.throttle.request()))
    if (this.opts.budgets) this.offs.push(this.opts.budgets.onAlert(() => this.throttle.request()))
    if (this.opts.plans) this.offs.push(this.opts.plans.subscribe(() => this.throttle.request()))
    const refresh = () => {
      this.throttle.request()
      this.tick = this.timers.setTimeout(refresh, this.opts.refreshMs ?? 30_000)
    }
    this.tick = this.timers.setTimeout(refresh, this.opts.refreshMs ?? 30_000)
  }

  /** Asks for a redraw (throttled). */
  update(): void {
    this.throttle.request()
  }

  private draw(): void {
    let alerts: readonly BudgetAlert[] = []
    let budgetsReadAt: number | null = null
    try {
      alerts = this.opts.budgets?.alerts() ?? []
      budgetsReadAt = this.opts.budgets?.staleSince?.() ?? null
    } catch {
      // budget state is advisory for the tray; spend still shows
    }
    const todayUsd = this.opts.spend.today()
    let projectedUsd: number | null = null
    try {
      if (todayUsd !== null && this.opts.paceOf) projectedUsd = this.opts.paceOf(todayUsd, Date.now())
    } catch {
      // the forecast is advisory
    }
    let plans: ReturnType<PlanSource['list']> = []
    try {
      plans = this.opts.plans?.list() ?? []
    } catch {
      // plan state is advisory for the tray
    }
    this.redrawAtReset(alerts, plans)
    const refused = todayUsd === null && (this.opts.spend.refused?.() ?? false)
    const errorStatus = todayUsd === null ? (this.opts.spend.errorStatus?.() ?? null) : null
    let unpricedToday = 0
    try {
      unpricedToday = this.opts.spend.unpriced?.() ?? 0
    } catch {
      // the count is advisory; the spend still shows
    }
    const view = trayView({ todayUsd, alerts, platform: this.opts.platform, projectedUsd, plans, refused, errorStatus, unpricedToday, budgetsReadAt })
    const key = JSON.stringify(view)
    if (key === this.last) return
    this.last = key
    this.view = view
    this.opts.render(view)
  }

  /**
   * Schedules a redraw at the earliest reset ahead among the budget levels and plan windows, or
   * plan window's run-out time, when it comes before the next refresh: the tracker speaks only
   * when an answer is read, so a plan window at 97% that resets at 14:20 read "5h 97% · resets
   * 14:20" past 14:20 until then, and one whose pace ran out at 13:05 read "out at 13:05" after it.
   */
  private redrawAtReset(alerts: readonly BudgetAlert[], plans: ReturnType<PlanSource['list']>): void {
    if (this.resetTick !== null) this.timers.clearTimeout(this.resetTick)
    this.resetTick = null
    const now = Date.now()
    let next = Infinity
    const consider = (iso: string | null) => {
      const t = iso === null ? NaN : Date.parse(iso)
      if (t > now && t < next) next = t
    }
    for (const a of alerts) consider(a.resets_at)
    // A run-out time too: read again then, the pace gives a later one (or none), never one passed.
    for (const account of plans) {
      for (const w of account.windows) {
        consider(w.resets_at)
        consider(w.projected_exhausted_at)
      }
    }
    if (next - now < (this.opts.refreshMs ?? 30_000)) this.resetTick = this.timers.setTimeout(() => this.throttle.request(), next - now + 1)
  }

  stop(): void {
    if (this.resetTick !== null) this.timers.clearTimeout(this.resetTick)
    this.resetTick = null
    this.throttle.stop()
    for (const off of this.offs.splice(0)) off()
    if (this.tick !== null) this.timers.clearTimeout(this.tick)
    this.tick = null
  }
}
