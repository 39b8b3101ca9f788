import type { BudgetsOverview } from '../../shared/api'
import { callEach } from '../ledger/listeners'
import { levelOf } from '../budgets/levels'
import { DEFAULT_ALERT_AT_PCT } from '../budgets/check'
import type { BudgetAlert, BudgetMonitor } from '../budgets/types'
import { type HttpPollOptions, pollJson } from './http-poll'
import { reached } from '../budgets/reached'

/** How an attached server is polled for its budget state (default every 2 s). */
export type HttpBudgetsOptions = HttpPollOptions

const RANK = { ok: 0, warning: 1, blocking: 2 } as const

type Window = BudgetsOverview['rules'][number]['windows'][number]
/** A window with a reset: every one but a session's. */
const isReset = (w: Window): w is Window & { resets_at: string } => typeof w.resets_at === 'string'

function alertOf(s: BudgetsOverview['rules'][number], w: Window & { resets_at: string }, level: BudgetAlert['level']): BudgetAlert {
  return {
    api_key_pattern: s.rule.api_key_pattern,
    api_key_hash: s.api_key_hash ?? '',
    key_hint: s.key_hint ?? '',
    period: w.period,
    level,
    spent_usd: w.spent_usd,
    limit_usd: w.limit_usd,
    resets_at: w.resets_at,
    // Calls of no known price in the window's spend (an older server's answer has no count).
    ...(typeof w.unpriced_requests === 'number' && w.unpriced_requests > 0 ? { unpriced_requests: w.unpriced_requests } : {}),
  }
}

/**
 * Attached to another Burnrate: its budget state read from `GET /api/dashboard/budgets`, as a
 * BudgetMonitor for the tray and the budget notifications. `onAlert` is told, as the server's own
 * monitor tells, when a key reaches a level under a rule in a period (the levels already standing
 * at the first answer included, as a notifier starting beside its own server reads them), and when
 * a rule's `alert_at_pct` threshold under 100% above `soft_limit_pct` is crossed between two
 * readings. `subscribe` is told whenever the alerts changed (a level reached or gone).
 */
export function httpBudgets(
  baseUrl: string, opts: HttpBudgetsOptions = {},
): BudgetMonitor & { subscribe(fn: () => void): () => void; staleSince(): number | null; stop(): void } {
  const alertListeners = new Set<(a: BudgetAlert) => void>()
  const changeListeners = new Set<() => void>()
  let current: BudgetAlert[] = []
  let last = '[]'
  /** Per rule, key and period: the period it was in and the spend last read, and the level last told. */
  let seen = new Map<string, { resets_at: string; spent: number; level: number }>()
  let first = true
  /** When the budgets were last read, and whether the last request for them went unanswered (an error, no answer). */
  let readAt: number | null = null
  let failing = false
  const tell = (a: BudgetAlert) => callEach(alertListeners, a)
  const poller = pollJson(baseUrl, '/api/dashboard/budgets', 2000, opts, (body, status) => {
    // Refused (the server's dashboard token changed): its budget state can no longer be read, so
    // none is claimed (the tray says the token is refused), rather than the last levels kept for
    // good, a key "blocking" days after its period ended. What was told stays told (`seen`).
    if (status === 401 || status === 403) {
      if (current.length === 0) return
      current = []
      last = '[]'
      for (const l of changeListeners) l()
      return
    }
    // No answer, or an error (a 500): keep what was last read (a block may well stand until its
    // reset), but no longer as current: staleSince() says since when (the spend source reports
    // an unreachable server or its error).
    const overview = body as BudgetsOverview | null | undefined
    if (overview === undefined || overview === null || typeof overview !== 'object' || !Array.isArray(overview.rules)) {
      if (failing) return
      failing = true
      if (current.length > 0) for (const l of changeListeners) l()
      return
    }
    const recovered = failing
    failing = false
    readAt = Date.now()
    // The levels, as the server's own monitor computes them (levelOf); rules no key has used yet have none.
    const alerts: BudgetAlert[] = []
    const next = new Map<string, { resets_at: string; spent: number; level: number }>()
    const told: BudgetAlert[] = []
    for (const s of overview.rules) {
      if (!s.api_key_hash) continue
      for (const w of s.windows ?? []) {
        // A session's limit is each session's own: the server's own monitor raises no alert for it either (announcer.ts).
        if (w.period === 'session' || !isReset(w)) continue
        const id = `${s.rule.api_key_pattern}\u0000${s.api_key_hash}\u0000${w.period}`
        const prev = seen.get(id)
        // A calendar period that reset starts from nothing; a rolling window's end moves with every call.
        const samePeriod = prev !== undefined && (w.period === 'window' || prev.resets_at === w.resets_at)
        const before = samePeriod ? prev.spent : 0
        const level = levelOf(s.rule, { spent: w.spent_usd, limit: w.limit_usd })
        if (level) alerts.push(alertOf(s, w, level))
        const rank = level ? RANK[level] : 0
        next.set(id, { resets_at: w.resets_at, spent: w.spent_usd, level: rank })
        if (level && rank > (samePeriod ? prev.level : 0)) told.push(alertOf(s, w, level))
        // Thresholds are told as they are crossed; at the first reading they were crossed before anyone listened.
        if (first || !(w.limit_usd > 0)) continue
        for (const pct of s.rule.alert_at_pct ?? DEFAULT_ALERT_AT_PCT) {
          if (pct >= 1 || (s.rule.soft_limit_pct !== null && pct <= s.rule.soft_limit_pct)) continue
          const at = pct * w.limit_usd
          if (!reached(before, at) && reached(w.spent_usd, at)) told.push({ ...alertOf(s, w, 'warning'), threshold_pct: pct })
        }
      }
    }
    seen = next
    first = false
    for (const a of told) tell(a)
    const text = JSON.stringify(alerts)
    if (text === last) {
      if (recovered && current.length > 0) for (const l of changeListeners) l()
      return
    }
    last = text
    current = alerts
    for (const l of changeListeners) l()
  })
  return {
    // A level stands until its window's reset at the latest: read from a server that stopped
    // answering, it is not shown past it (a key "Blocking" the next day and the next).
    alerts: () => {
      const now = Date.now()
      return current.some((a) => !(Date.parse(a.resets_at) > now)) ? current.filter((a) => Date.parse(a.resets_at) > now) : current
    },
    // While the last request for the budgets went unanswered: when the levels shown were read; else null (current, or none shown).
    staleSince: () => (failing && current.length > 0 ? readAt : null),
    onAlert(listener) {
      alertListeners.add(listener)
      return () => alertListeners.delete(listener)
    },
    subscribe(fn) {
      changeListeners.add(fn)
      return () => changeListeners.delete(fn)
    },
    stop() {
      poller.stop()
      alertListeners.clear()
      changeListeners.clear()
    },
  }
}
