import type { PlanAccount, PlanWindow, Plans } from '../../shared/api'
import { formatPct } from '../../shared/format'
import { type PlanAlert, samePeriod } from '../plans/tracker'
import type { Notice } from './notices'
import { type HttpPollOptions, pollJson } from './http-poll'

/** Where the tray reads plan windows: the plans feature in this process (PlanTracker). */
export interface PlanSource {
  list(now?: number): PlanAccount[]
  subscribe(fn: () => void): () => void
}

function dayOf(ms: number, timeZone?: string): string {
  return new Intl.DateTimeFormat('en-CA', { year: 'numeric', month: '2-digit', day: '2-digit', timeZone }).format(new Date(ms))
}

/**
 * When a window resets or runs out, in `timeZone` (default: this machine's): `14:20` today,
 * `Fri 14:20` within six days, `5 Dec 14:20` beyond; a 7-day window's reset is rarely today.
 */
export function clock(iso: string, now: number, timeZone?: string): { text: string; today: boolean } {
  const at = Date.parse(iso)
  const time = new Intl.DateTimeFormat('en-GB', { hour: '2-digit', minute: '2-digit', hour12: false, timeZone }).format(new Date(at))
  if (dayOf(at, timeZone) === dayOf(now, timeZone)) return { text: time, today: true }
  const day = at - now < 6 * 86_400_000
    ? new Intl.DateTimeFormat('en-GB', { weekday: 'short', timeZone }).format(new Date(at))
    : new Intl.DateTimeFormat('en-GB', { day: 'numeric', month: 'short', timeZone }).format(new Date(at))
  return { text: `${day} ${time}`, today: false }
}

/**
 * The plan window people most need to see: among subscription accounts (else any account), the
 * fullest window that has not reset yet.
 */
export function busiestWindow(accounts: readonly PlanAccount[], now: number): { account: PlanAccount; window: PlanWindow } | null {
  const subs = accounts.filter((a) => a.billing === 'subscription')
  let best: { account: PlanAccount; window: PlanWindow } | null = null
  for (const account of subs.length > 0 ? subs : accounts) {
    for (const window of account.windows) {
      if (window.resets_at !== null && Date.parse(window.resets_at) <= now) continue
      if (!best || window.utilization > best.window.utilization) best = { account, window }
    }
  }
  return best
}

/** `5h 43%` for the menu-bar title, or null without plan windows. */
export function planShort(accounts: readonly PlanAccount[], now: number): string | null {
  const b = busiestWindow(accounts, now)
  return b ? `${b.window.name} ${formatPct(b.window.utilization)}` : null
}

/**
 * `5h 43% · resets 14:20` (`7d 70% · resets Fri 14:00` on another day), with the pace when it says something: `· out at 13:05` when this
 * pace runs the window out before it resets (nothing once that time has passed), else `· on pace for 60%`.
 */
export function planLine(accounts: readonly PlanAccount[], now: number, timeZone?: string): string | null {
  const b = busiestWindow(accounts, now)
  if (!b) return null
  const w = b.window
  let line = `${w.name} ${formatPct(w.utilization)}`
  if (w.resets_at) line += ` · resets ${clock(w.resets_at, now, timeZone).text}`
  // A run-out that has passed (the last one read from an attached server that no longer answers:
  // a server draws the pace anew at each answer) is no time ahead, nor is the pace it came from.
  if (w.projected_exhausted_at && w.utilization < 1) {
    if (Date.parse(w.projected_exhausted_at) > now) line += ` · out at ${clock(w.projected_exhausted_at, now, timeZone).text}`
  } else if (w.projected_at_reset !== null && w.utilization < 1) line += ` · on pace for ${formatPct(w.projected_at_reset)}`
  return line
}

/** The plans' names in notifications, by provider. */
const PLAN_NAMES: Record<string, string> = { anthropic: 'Claude', chatgpt: 'ChatGPT', 'code-assist': 'Gemini Code Assist' }

/** The notification for a plan window reaching a threshold (shown once per window period and threshold). */
export function planNotice(a: PlanAlert, timeZone?: string, now = Date.now()): Notice {
  const pct = formatPct(a.utilization)
  const who = PLAN_NAMES[a.provider] ?? a.provider
  const reset = a.resets_at ? clock(a.resets_at, now, timeZone) : null
  const until = reset ? ` It resets ${reset.today ? 'at ' : ''}${reset.text}.` : ''
  return {
    level: a.threshold >= 0.95 ? 'blocking' : 'warning',
    title: `${who} plan: ${a.window} window at ${pct}`,
    body: `The ${a.window} window of ${a.account_hint || 'your plan'} has used ${pct} of its allowance.${until}`,
  }
}

/**
 * Which plan notices were shown, remembered across restarts (a JSON file beside the budget
 * notices): the tracker starts empty after a restart and would otherwise notify again about a
 * window it already told about. An entry is dropped once its window has reset.
 */
export class PlanNoticeLog {
  private readonly entries: Map<string, string>

  constructor(entries: Record<string, string> = {}) {
    this.entries = new Map(Object.entries(entries).filter(([k, v]) => typeof k === 'string' && typeof v === 'string'))
  }

  static fromJSON(raw: unknown): PlanNoticeLog {
    return new PlanNoticeLog(raw && typeof raw === 'object' && !Array.isArray(raw) ? (raw as Record<string, string>) : {})
  }

  /** True the first time this window period reaches this threshold (and remembers it). */
  claim(a: PlanAlert, now = Date.now()): boolean {
    for (const [id, end] of this.entries) if (!(Date.parse(end) > now)) this.entries.delete(id)
    if (this.entries.has(a.id)) return false
    // After a restart the tracker's period starts at a later reading, whose reset may have drifted
    // (Codex's moves with every call): an entry of the same window and threshold whose reset is
    // within a drift is this period.
    const cut = a.id.lastIndexOf('\0')
    if (cut >= 0 && a.resets_at !== null) {
      const slot = a.id.slice(0, cut + 1)
      const at = Date.parse(a.resets_at)
      for (const [id, end] of this.entries) if (id.startsWith(slot) && samePeriod(Date.parse(end), at)) return false
    }
    // Without a reset time the notice is remembered for a day.
    this.entries.set(a.id, a.resets_at ?? new Date(now + 86_400_000).toISOString())
    return true
  }

  toJSON(): Record<string, string> {
    return Object.fromEntries(this.entries)
  }
}

/** How an attached server is polled for its plans (default every 5 s; windows move with calls, not by the second). */
export type HttpPlansOptions = HttpPollOptions

/** Attached to another Burnrate: reads `GET /api/dashboard/plans` every few seconds. */
export function httpPlans(baseUrl: string, opts: HttpPlansOptions = {}): PlanSource & { stop(): void } {
  const listeners = new Set<() => void>()
  let accounts: PlanAccount[] = []
  let last = '[]'
  const poller = pollJson(baseUrl, '/api/dashboard/plans', 5000, opts, (body, status) => {
    // Refused (the server's dashboard token changed): its windows can no longer be read, so none
    // are shown (the tray says the token is refused), not the last ones as if current.
    const refused = status === 401 || status === 403
    // No answer: keep what was last read; the spend source reports an unreachable server.
    if (!refused && (body === undefined || body === null)) return
    const got = refused ? [] : (body as Partial<Plans>).accounts
    const next = Array.isArray(got) ? got : []
    const text = JSON.stringify(next)
    if (text === last) return
    last = text
    accounts = next
    for (const l of listeners) l()
  })
  return {
    list: () => accounts,
    subscribe(fn) {
      listeners.add(fn)
      return () => listeners.delete(fn)
    },
    stop() {
      poller.stop()
      listeners.clear()
    },
  }
}
