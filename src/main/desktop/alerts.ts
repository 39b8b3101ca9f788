import { join } from 'node:path'
import { budgetsOf } from '../budgets'
import type { BudgetMonitor } from '../budgets/types'
import type { Config } from '../config/schema'
import { readJsonFile, writeJsonFile } from '../desktop-logic/json-file'
import { BudgetNotifier, NoticeLog, type Notice } from '../desktop-logic/notices'
import { RunawayNoticeLog, runawayNotice } from '../desktop-logic/runaway-notices'
import { PlanNoticeLog, planNotice } from '../desktop-logic/tray-plans'
import type { BurnrateServer } from '../server/server'
import { showNotice } from './notifications'
import { appIcon } from './resources'

export interface AlertOptions {
  /** This app's own server; null when attached to another Burnrate. */
  own: BurnrateServer | null
  /** The budget state notified: the own server's, or the attached server's read over HTTP (budget-source.ts). */
  budgets: BudgetMonitor | null
  /** Resolves when `budgets` can be read as it is to be notified (the own server's counts of calls of no known price, first read); the alerts standing at start wait for it. */
  ready?: Promise<void>
  config: Config
  userData: string
  platform: NodeJS.Platform
  openDashboard(): void
}

/**
 * Desktop notifications: budget levels (from the own server, or an attached one's read over
 * HTTP), and with its own server runaway agents (loops, session spend-rate alarms; once per
 * session and kind) and plan windows at 80% and 95% (once per window period). Budget and plan
 * notices already shown are remembered in userData across restarts. Returns what stops them.
 */
export function startAlerts(o: AlertOptions): () => void {
  const { own, config, userData, platform, budgets } = o
  const show = (notice: Notice) => showNotice(notice, o.openDashboard, platform === 'darwin' ? undefined : appIcon())

  let notifier: BudgetNotifier | null = null
  if (budgets) {
    const noticesFile = join(userData, 'notices.json')
    notifier = new BudgetNotifier({
      monitor: budgets,
      log: NoticeLog.fromJSON(readJsonFile(noticesFile)),
      timezone: config.timezone,
      show,
      save: (noticeLog) => writeJsonFile(noticesFile, noticeLog),
      ready: o.ready,
    })
    notifier.start()
  }

  const runawayNotices = new RunawayNoticeLog()
  const runawaySettings = { windowMinutes: config.runaway.loop.window_minutes, usdPerMinute: config.runaway.spend_rate.usd_per_minute }
  const offRunaway = own?.context.budgets
    ? budgetsOf(own.context).runaway.onEvent((e) => {
        if (runawayNotices.claim(e)) show(runawayNotice(e, runawaySettings))
      })
    : undefined

  const planNoticesFile = join(userData, 'plan-notices.json')
  const planNotices = PlanNoticeLog.fromJSON(readJsonFile(planNoticesFile))
  const offPlans = own?.context.plans?.onAlert((a) => {
    if (!planNotices.claim(a)) return
    try {
      writeJsonFile(planNoticesFile, planNotices)
    } catch {
      // not remembering costs at most a repeated notice after a restart
    }
    show(planNotice(a))
  })

  return () => {
    notifier?.stop()
    offRunaway?.()
    offPlans?.()
  }
}
