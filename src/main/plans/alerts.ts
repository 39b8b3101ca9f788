import { callEach } from '../ledger/listeners'

/**
 * Resets closer than this are one window period: vendors' resets drift (Codex sends seconds until
 * the reset, so every call's reset moves by a few ms; Claude's moves by a second either way).
 */
export const SAME_PERIOD_MS = 60_000
/**
 * How long the alerts of a login token not yet known to belong to an account wait for it (its
 * next call naming the account) before they are told as the token's own.
 */
export const PARK_MS = 60_000
/** Alerts remembered as told (the oldest forgotten first). */
const MAX_TOLD = 4096

/** Whether two resets (ms, or null without one) are of the same window period. */
export function samePeriod(x: number | null, y: number | null): boolean {
  if (x === null || y === null) return x === y
  return Math.abs(x - y) < SAME_PERIOD_MS
}

/**
 * The part of an alert's id that names its account, window and threshold; the period follows it.
 * The account by its key (a hash of the vendor's account, or of the credential), not its hint: a
 * login's hint is the first token seen in this process, which a refresh before a restart changes,
 * and the notice log kept across restarts would not know the same period again.
 */
export function alertSlot(key: string, window: string, threshold: number): string {
  return `${key}\0${window}\0${threshold}\0`
}

/** A window crossing a threshold: shown once per window period (account, window and its reset). */
export interface PlanAlert {
  provider: string
  account_hint: string
  window: string
  threshold: number
  utilization: number
  resets_at: string | null
  /** Stable id of this window period and threshold, for showing it once: `alertSlot(…)` then the period's first reset (ms). */
  id: string
}

interface Parked {
  alert: PlanAlert
  period: number | null
  at: number
}

/**
 * The plan alerts told, each once per account, window, threshold and period (../plans/tracker.ts),
 * and those of login tokens whose account is not known yet, which wait for it (`park`): one
 * crossing of an account's window is one alert, whichever of its tokens read it first.
 */
export class PlanAlerts {
  private readonly listeners = new Set<(a: PlanAlert) => void>()
  private readonly told = new Set<string>()
  /** Parked alerts by account key (`provider\0account`). */
  private readonly parked = new Map<string, Parked[]>()
  /** Lets parked alerts go once PARK_MS has passed (only while some are parked). */
  private timer: NodeJS.Timeout | null = null

  onAlert(fn: (a: PlanAlert) => void): () => void {
    this.listeners.add(fn)
    return () => this.listeners.delete(fn)
  }

  /**
   * Whether alert `id` of account `key` was told or waits: it, or the same slot in a period within
   * a drift of `period` (a token's first reading and its account's name resets a second apart).
   */
  known(key: string, id: string, period: number | null): boolean {
    if (this.told.has(id)) return true
    if (this.parked.get(key)?.some((p) => p.alert.id === id)) return true
    if (period === null) return false
    const slot = id.slice(0, id.lastIndexOf('\0') + 1)
    for (const other of this.told) {
      if (other.startsWith(slot) && other.length > slot.length && samePeriod(Number(other.slice(slot.length)), period)) return true
    }
    return false
  }

  /** Tells each alert, and remembers it as told. */
  tell(alerts: readonly PlanAlert[]): void {
    for (const alert of alerts) {
      this.remember(alert.id)
      callEach(this.listeners, alert)
    }
  }

  /** Remembers alert `id` as told without telling it (a crossing told under the period before: ./tracker.ts carryOver). */
  remember(id: string): void {
    this.told.add(id)
    if (this.told.size > MAX_TOLD) this.told.delete(this.told.values().next().value as string)
  }

  /** Keeps the alert of account `key` (a login token whose account is not known yet) until `merge`, `release` or PARK_MS. */
  park(key: string, alert: PlanAlert, period: number | null, now: number): void {
    let list = this.parked.get(key)
    if (!list) this.parked.set(key, (list = []))
    list.push({ alert, period, at: now })
    this.wake()
  }

  /** Account `key` is known to be an account of its own: what waited is told as its. */
  release(key: string): void {
    const list = this.parked.get(key)
    if (!list) return
    this.parked.delete(key)
    this.tell(list.map((p) => p.alert))
  }

  /** Forgets what account `key` has waiting (the account is dropped). */
  drop(key: string): void {
    this.parked.delete(key)
  }

  /**
   * The token `from` belongs to account `to` (hint `hint`): what the token told is the account's
   * too, and what waits is told as the account's unless the account told it.
   */
  merge(from: string, to: string, hint: string): void {
    const fromSlot = `${from}\0`
    for (const id of [...this.told]) if (id.startsWith(fromSlot)) this.told.add(`${to}\0${id.slice(fromSlot.length)}`)
    const list = this.parked.get(from) ?? []
    this.parked.delete(from)
    const out: PlanAlert[] = []
    for (const p of list) {
      const id = `${alertSlot(to, p.alert.window, p.alert.threshold)}${p.period ?? ''}`
      if (!this.known(to, id, p.period) && !out.some((a) => a.id === id)) out.push({ ...p.alert, account_hint: hint, id })
    }
    this.tell(out)
  }

  /**
   * Tells, as their token's own, the alerts parked for PARK_MS with no call naming an account
   * since (a token that never does: an OAuth client other than Claude Code); those of a period
   * that has ended meanwhile are dropped.
   */
  releaseParked(now: number): void {
    for (const [key, list] of this.parked) {
      const due = list.filter((p) => p.at + PARK_MS <= now)
      if (due.length === 0) continue
      const rest = list.filter((p) => p.at + PARK_MS > now)
      if (rest.length > 0) this.parked.set(key, rest)
      else this.parked.delete(key)
      this.tell(due.filter((p) => p.alert.resets_at === null || Date.parse(p.alert.resets_at) > now).map((p) => p.alert))
    }
    this.wake()
  }

  /** Stops the timer of parked alerts (the server's close). */
  close(): void {
    if (this.timer) clearTimeout(this.timer)
    this.timer = null
  }

  private wake(): void {
    if (this.timer || this.parked.size === 0) return
    this.timer = setTimeout(() => {
      this.timer = null
      this.releaseParked(Date.now())
    }, PARK_MS)
    this.timer.unref()
  }
}
