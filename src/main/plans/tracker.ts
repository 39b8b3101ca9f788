import { hash } from 'node:crypto'
import type { CallBilling, PlanAccount, PlanWindow } from '../../shared/api'
import { type PlanAlert, PlanAlerts, SAME_PERIOD_MS, alertSlot, samePeriod } from './alerts'
import type { MeterReading, MeterWindow } from './types'

export { PARK_MS, type PlanAlert, samePeriod } from './alerts'

/** Readings kept per window for the pace: the period's first and the latest ones (the oldest after the first go first). */
const HISTORY = 32
/** Accounts kept (credentials come from clients, so this is bounded). */
const MAX_ACCOUNTS = 256
/** Default notification thresholds. */
export const DEFAULT_THRESHOLDS = [0.8, 0.95]

/** Whether reading `w` is of a window period before the one `st` holds (its reset earlier by more than a drift). */
function endedBefore(w: MeterWindow, st: WindowState): boolean {
  return w.resets_at !== null && st.latest.resets_at !== null && w.resets_at < st.latest.resets_at - SAME_PERIOD_MS
}

interface Point {
  t: number
  u: number
}

interface WindowState {
  latest: MeterWindow
  /** The reset of this period's first reading: the period's identity, which later drifts do not move. */
  period: number | null
  history: Point[]
}

interface Account {
  /** `provider\0account`: what stays the same across the credential's refreshes and restarts. */
  key: string
  provider: string
  hint: string
  billing: CallBilling
  kind: MeterReading['kind']
  updated: number
  /** When the latest reading taken was true (its answer's time): an older one read after it is older news. */
  readAt: number
  windows: Map<string, WindowState>
  details: Record<string, string>
  /** A login token whose account is not known yet (`Observed.provisional`): its alerts wait (./alerts.ts). */
  provisional: boolean
}

export interface Observed {
  provider: string
  /** The account: a hash of the credential (or of the vendor's account id). */
  account: string
  hint: string
  billing: CallBilling
  /**
   * The account is a login token's own for now: its calls so far named no account (a Claude
   * login's token counting), and a later one may name the account it belongs to (`merge`).
   */
  provisional?: boolean
}

/**
 * The latest meter of each account with a short history per window, so the pace can be told:
 * "at this pace the 5-hour window runs out at 13:05", or "you will finish it at 60%". The pace
 * is the straight line through the readings of the current window period (same reset), from
 * the first to the latest.
 */
export class PlanTracker {
  private readonly accounts = new Map<string, Account>()
  private readonly listeners = new Set<() => void>()
  private readonly alerts = new PlanAlerts()

  constructor(private readonly thresholds: readonly number[] = DEFAULT_THRESHOLDS) {}

  /**
   * A reading of account `who`'s meter, read at `now`; `at` is when it was true, where that is
   * earlier (a Codex socket's upgrade answer, shown with the socket's first call): the pace places
   * it there, and a window read since keeps its newer reading.
   */
  observe(who: Observed, reading: MeterReading, now = Date.now(), at = now): void {
    const key = `${who.provider}\0${who.account}`
    let a = this.accounts.get(key)
    if (!a) {
      if (this.accounts.size >= MAX_ACCOUNTS) {
        const oldest = [...this.accounts.entries()].sort((x, y) => x[1].updated - y[1].updated)[0]
        this.accounts.delete(oldest[0])
        this.alerts.drop(oldest[0])
      }
      a = { key, provider: who.provider, hint: who.hint, billing: who.billing, kind: reading.kind, updated: now, readAt: at, windows: new Map(), details: {}, provisional: false }
      this.accounts.set(key, a)
    }
    a.provisional = who.provisional === true
    // Known now to be an account of its own (a token given alone, whose calls name no account): what waited is told.
    if (!a.provisional) this.alerts.release(key)
    // A plan's reading wins over a key's for the same account; a key's never hides a plan's windows.
    if (reading.kind === 'key' && a.kind === 'plan' && a.windows.size > 0) return
    // The account's first plan reading: the windows so far were a key's rate limits, which a plan's
    // replace (else `tokens` stays beside `5h`, never updated again).
    if (reading.kind === 'plan' && a.kind === 'key') a.windows.clear()
    a.kind = reading.kind
    a.updated = now
    a.billing = who.billing
    // Older news (read after a newer reading) fills in only what the account has not heard since.
    // (Only a reading said to be older is: one read as it came is news, whatever the clock did.)
    const older = at < now && at < a.readAt
    a.details = older ? { ...reading.details, ...a.details } : { ...a.details, ...reading.details }
    a.readAt = older ? a.readAt : at
    for (let w of reading.windows) {
      let st = a.windows.get(w.name)
      // A reading of when the window was read since (a socket's upgrade answer shown with its first
      // call, after another session's calls read the window anew): it tells nothing of the window now.
      if (st && at < now && st.history.length > 0 && at < st.history[st.history.length - 1].t) continue
      // A reading that names no reset (Codex's refusal on a WebSocket carries only the used
      // percent) of a window whose period has not ended is of that period: it keeps its reset,
      // its pace and its alerts, rather than starting a period without a reset.
      if (st && w.resets_at === null && st.latest.resets_at !== null && st.latest.resets_at > now) w = { ...w, resets_at: st.latest.resets_at }
      // A reading of a period that has ended (a slow answer, whose headers come after a newer
      // call's reported the next period): it tells nothing of the window now, and a period never
      // moves back to an earlier reset.
      if (st && endedBefore(w, st)) continue
      const before = st
      // A new window period (the reset moved by more than a drift): its pace starts afresh.
      // A reset that slid, reading by reading, off the period's first (a key's limit whose reset is
      // "now + duration", Groq's and OpenAI's `1m2s`: a sliding window) is a new period too, its pace
      // from the reading before it: else a busy agent's window is one period for good, its pace
      // drawn from a reading hours old.
      if (st && !samePeriod(st.latest.resets_at, w.resets_at)) st = undefined
      else if (st && !samePeriod(st.period, w.resets_at)) {
        st = { latest: w, period: w.resets_at, history: st.history.slice(-1) }
        a.windows.set(w.name, st)
      }
      if (!st) {
        st = { latest: w, period: w.resets_at, history: [] }
        a.windows.set(w.name, st)
      }
      if (before && before !== st) this.carryOver(a, before, st, w, now)
      st.latest = w
      st.history.push({ t: at, u: w.utilization })
      // The period's first reading stays: the pace runs from it (the oldest after it go first).
      if (st.history.length > HISTORY) st.history.splice(1, st.history.length - HISTORY)
      this.checkThresholds(a, st, now)
    }
    for (const l of this.listeners) l()
  }

  /**
   * A new period `next` of a window whose period `prev` had not reset when reading `w` came (its
   * reset later: one that slides, "now + what is left", or moved on): the thresholds `prev` told
   * that its latest reading and `w` are both over are one crossing, told already. Told again, a
   * sliding window (a new period every minute of slide, for its pace) was told every minute while
   * it stayed over a threshold. A window that has reset, or that `w` finds back under a threshold,
   * crosses it anew.
   */
  private carryOver(a: Account, prev: WindowState, next: WindowState, w: MeterWindow, now: number): void {
    if (a.kind !== 'plan' || prev.latest.resets_at === null || prev.latest.resets_at <= now) return
    for (const th of this.thresholds) {
      if (prev.latest.utilization < th || w.utilization < th) continue
      if (!this.alerts.known(a.key, `${alertSlot(a.key, w.name, th)}${prev.period ?? ''}`, prev.period)) continue
      this.alerts.remember(`${alertSlot(a.key, w.name, th)}${next.period ?? ''}`)
    }
  }

  private checkThresholds(a: Account, st: WindowState, now: number): void {
    if (a.kind !== 'plan') return
    const w = st.latest
    // Read after its window reset (the upgrade answer of a socket opened before the reset, shown
    // with its first call after it): the period it speaks of has ended, nothing to tell of it now.
    if (w.resets_at !== null && w.resets_at <= now) return
    for (const th of this.thresholds) {
      if (w.utilization < th) continue
      // The period's identity, not this reading's reset: a drifting reset is no new period.
      const id = `${alertSlot(a.key, w.name, th)}${st.period ?? ''}`
      if (this.alerts.known(a.key, id, st.period)) continue
      const alert: PlanAlert = {
        provider: a.provider,
        account_hint: a.hint,
        window: w.name,
        threshold: th,
        utilization: w.utilization,
        resets_at: w.resets_at === null ? null : new Date(w.resets_at).toISOString(),
        id,
      }
      // A token whose account is not known yet: the account may have told this period already.
      if (a.provisional) this.alerts.park(a.key, alert, st.period, now)
      else this.alerts.tell([alert])
    }
  }

  /** Tells, as their token's own, the alerts of tokens whose account stayed unknown for PARK_MS (./alerts.ts). */
  releaseParked(now: number): void {
    this.alerts.releaseParked(now)
  }

  /** Stops the timer of waiting alerts (the server's close). */
  close(): void {
    this.alerts.close()
  }

  /**
   * The readings filed under `from` (a login's token before its account was known) belong to
   * account `to`: the account is dropped, its windows moved to `to` when it has none yet.
   */
  merge(provider: string, from: string, to: string): void {
    const a = this.accounts.get(`${provider}\0${from}`)
    if (!a) return
    this.accounts.delete(a.key)
    const key = `${provider}\0${to}`
    const target = this.accounts.get(key) ?? { ...a, key }
    if (target !== this.accounts.get(key)) this.accounts.set(key, target)
    // One crossing of the account's window is one alert, whichever of its tokens read it first.
    this.alerts.merge(a.key, key, target.hint)
    for (const l of this.listeners) l()
  }

  /** `fn` runs after every reading; returns an unsubscribe function. */
  subscribe(fn: () => void): () => void {
    this.listeners.add(fn)
    return () => this.listeners.delete(fn)
  }

  /** `fn` runs when a plan window first reaches a threshold (80% and 95% by default) in a window period. */
  onAlert(fn: (a: PlanAlert) => void): () => void {
    return this.alerts.onAlert(fn)
  }

  /** Every account, most recently updated first (GET /api/dashboard/plans). */
  list(now = Date.now()): PlanAccount[] {
    return [...this.accounts.values()]
      .sort((x, y) => y.updated - x.updated)
      .map((a) => ({
        provider: a.provider,
        account_hint: a.hint,
        account_id: accountId(a.key),
        billing: a.billing,
        updated_at: new Date(a.updated).toISOString(),
        windows: [...a.windows.values()].map((st) => windowJson(st, now)),
        details: a.details,
      }))
  }
}

/**
 * An account's id for the API and /metrics: a hash of its key (the provider and the hash of the
 * credential or of the vendor's account), so it is the same across restarts and tells apart
 * accounts whose hints are the same, and names no credential.
 */
function accountId(key: string): string {
  return hash('sha256', `plan-account:${key}`, 'hex').slice(0, 16)
}

/**
 * The window with its pace: where the line through this period's readings, and on to `now` at the
 * latest reading's utilization, meets 100%, and where it stands at the reset.
 */
export function windowJson(st: WindowState, now: number): PlanWindow {
  const w = st.latest
  // Its reset has passed with no reading since: a fresh period, of which nothing is known yet.
  if (w.resets_at !== null && w.resets_at <= now) {
    return {
      name: w.name,
      utilization: 0,
      resets_at: new Date(w.resets_at).toISOString(),
      status: '',
      projected_exhausted_at: null,
      projected_at_reset: null,
      window_minutes: w.window_minutes,
    }
  }
  const h = st.history
  let exhausted: number | null = null
  let atReset: number | null = null
  if (h.length >= 2) {
    const first = h[0]
    const last = h[h.length - 1]
    // The line runs on to now: no reading since the latest is no use through Burnrate since (the
    // window stands where it was), so a pause slows the pace, and a run-out time is never one that
    // has passed with the window short of its limit (13:05 said at 14:00 of a window at 60%).
    const to = Math.max(now, last.t)
    const rate = last.t > first.t ? (last.u - first.u) / (to - first.t) : 0 // utilization per ms
    if (rate > 0) {
      const end = w.resets_at ?? Infinity
      const at = to + (1 - last.u) / rate
      if (last.u >= 1) exhausted = last.t
      else if (at < end) exhausted = Math.round(at)
      if (w.resets_at !== null) atReset = Math.min(1, last.u + rate * Math.max(0, w.resets_at - to))
    } else if (w.resets_at !== null) {
      atReset = last.u
    }
  }
  if (w.utilization >= 1 && exhausted === null) exhausted = h.length > 0 ? h[h.length - 1].t : now
  return {
    name: w.name,
    utilization: w.utilization,
    resets_at: w.resets_at === null ? null : new Date(w.resets_at).toISOString(),
    status: w.status,
    projected_exhausted_at: exhausted === null ? null : new Date(exhausted).toISOString(),
    projected_at_reset: atReset,
    window_minutes: w.window_minutes,
  }
}
