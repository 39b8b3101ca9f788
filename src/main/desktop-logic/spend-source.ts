import type { Ledger } from '../ledger/ledger'
import type { Summary } from '../../shared/api'
import { type Timers, realTimers } from './throttle'

/** Where the tray reads today's spend: the ledger in this process, or an attached server over HTTP. */
export interface SpendSource {
  /** Today's spend in USD, or null while it cannot be read. */
  today(): number | null
  /** `fn` runs whenever the spend may have changed; returns an unsubscribe function. */
  subscribe(fn: () => void): () => void
  stop(): void
}

/** In-process: the ledger's in-memory counters (O(1)), updated the moment a call is recorded. */
export function ledgerSpend(ledger: Pick<Ledger, 'spend' | 'onCall'>): SpendSource {
  const offs: (() => void)[] = []
  return {
    today: () => ledger.spend.totals().day,
    subscribe(fn) {
      const off = ledger.onCall(() => fn())
      offs.push(off)
      return off
    },
    stop() {
      for (const off of offs.splice(0)) off()
    },
  }
}

export interface HttpSpendOptions {
  /** How often to ask (default 500 ms): the tray promises an update within about a second of a call. */
  pollMs?: number
  /** Per-request timeout. */
  timeoutMs?: number
  fetch?: typeof fetch
  timers?: Timers
  /** Extra request headers (a dashboard token). */
  headers?: Record<string, string>
}

/**
 * Attached to another Burnrate (the headless one owns the port): reads
 * `GET /api/dashboard/summary` twice a second and reports when `today_spend_usd` changes.
 */
export function httpSpend(baseUrl: string, opts: HttpSpendOptions = {}): SpendSource {
  const pollMs = opts.pollMs ?? 500
  const timeoutMs = opts.timeoutMs ?? 2000
  const doFetch = opts.fetch ?? fetch
  const timers = opts.timers ?? realTimers
  const url = new URL('/api/dashboard/summary', baseUrl).toString()
  const listeners = new Set<() => void>()
  let value: number | null = null
  let timer: unknown = null
  let stopped = false
  let inFlight = false

  const set = (v: number | null) => {
    if (v === value) return
    value = v
    for (const l of listeners) l()
  }

  const poll = async () => {
    timer = null
    if (stopped || inFlight) return
    inFlight = true
    try {
      const res = await doFetch(url, { headers: opts.headers, signal: AbortSignal.timeout(timeoutMs) })
      if (!res.ok) throw new Error(`HTTP ${res.status}`)
      const body = (await res.json()) as Partial<Summary>
      const day = body.today_spend_usd
      set(typeof day === 'number' && Number.isFinite(day) ? day : null)
    } catch {
      set(null)
    } finally {
      inFlight = false
      if (!stopped) timer = timers.setTimeout(() => void poll(), pollMs)
    }
  }
  void poll()

  return {
    today: () => value,
    subscribe(fn) {
      listeners.add(fn)
      return () => listeners.delete(fn)
    },
    stop() {
      stopped = true
      listeners.clear()
      if (timer !== null) timers.clearTimeout(timer)
      timer = null
    },
  }
}
