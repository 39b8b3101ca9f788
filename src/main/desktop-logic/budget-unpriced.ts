import type { BudgetsOverview } from '../../shared/api'
import type { BudgetAlert, BudgetMonitor } from '../budgets/types'
import { type Timers, realTimers } from './throttle'

/** Which window of which key under which rule an alert is about: as the budgets answer names them (a whole key by its hint). */
const idOf = (pattern: string, hash: string, period: string) => `${pattern}\u0000${hash}\u0000${period}`

/** The budget windows' counts of calls of no known price, as last read. */
export interface BudgetUnpriced {
  /** The count of the alert's window (0 when none, or not read yet). */
  count(a: Pick<BudgetAlert, 'api_key_pattern' | 'api_key_hash' | 'period'>): number
  /** Resolves once the first read ended. */
  readonly ready: Promise<void>
  stop(): void
}

/**
 * Per rule, key and window: how many calls of a model with no known price its spend counted as
 * $0 (the budgets answer's `unpriced_requests`), read at once and every `pollMs` (default 5 s) with `read`: the app's own server's `GET /api/dashboard/budgets` answer, read in
 * process (../dashboard/budgets-answer.ts), on a timer of its own, never on the path of a call.
 * `changed` runs when a count moved.
 */
export function polledBudgetUnpriced(
  read: () => Promise<BudgetsOverview>,
  opts: { pollMs?: number; timers?: Timers; changed?: () => void } = {},
): BudgetUnpriced {
  const timers = opts.timers ?? realTimers
  let counts = new Map<string, number>()
  let timer: unknown = null
  let stopped = false
  const load = async (): Promise<void> => {
    if (stopped) return
    try {
      const answer = await read()
      const next = new Map<string, number>()
      for (const s of answer.rules) {
        if (!s.api_key_hash) continue
        for (const w of s.windows) if (w.unpriced_requests > 0) next.set(idOf(s.rule.api_key_pattern, s.api_key_hash, w.period), w.unpriced_requests)
      }
      const moved = next.size !== counts.size || [...next].some(([k, n]) => counts.get(k) !== n)
      counts = next
      if (moved && !stopped) opts.changed?.()
    } catch {
      // the counts are advisory (a store closing at shutdown): the last ones stay
    }
  }
  const tick = async (): Promise<void> => {
    timer = null
    await load()
    if (!stopped) timer = timers.setTimeout(() => void tick(), opts.pollMs ?? 5000)
  }
  const ready = tick()
  return {
    count: (a) => counts.get(idOf(a.api_key_pattern, a.api_key_hash, a.period)) ?? 0,
    ready,
    stop() {
      stopped = true
      if (timer !== null) timers.clearTimeout(timer)
      timer = null
    },
  }
}

/**
 * `monitor`'s alerts, each with the count of its window's calls of no known price
 * (`unpriced_requests`, as last read; none when 0), so the tray's budget line and the
 * notifications mark its spend as the lower bound it is. The app's own server's monitor counts
 * money only; an attached server's (./budget-source.ts) carries the counts of its answers already.
 * An alert raised before the first read ended is told once it has, in the order raised.
 */
export function withUnpricedCounts(monitor: BudgetMonitor, counts: Pick<BudgetUnpriced, 'count' | 'ready'>): BudgetMonitor {
  const marked = (a: BudgetAlert): BudgetAlert => {
    const n = counts.count(a)
    return n > 0 ? { ...a, unpriced_requests: n } : a
  }
  let ready = false
  void counts.ready.then(() => (ready = true))
  return {
    alerts: (now) => monitor.alerts(now).map(marked),
    onAlert(listener) {
      let on = true
      const off = monitor.onAlert((a) => {
        if (ready) listener(marked(a))
        else void counts.ready.then(() => on && listener(marked(a)))
      })
      return () => {
        on = false
        off()
      }
    },
  }
}
