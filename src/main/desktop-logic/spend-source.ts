import { unpricedIn } from '../dashboard/unpriced-counts'
import type { CallLedger as Ledger } from '../ledger/types'
import type { SqlReader } from '../storage/sql'
import type { Summary } from '../../shared/api'
import { type HttpPollOptions, pollJson } from './http-poll'
import { type Timers, realTimers } from './throttle'

/** Where the tray reads today's spend: the ledger in this process, or an attached server over HTTP. */
export interface SpendSource {
  /** Today's spend in USD, or null while it cannot be read. */
  today(): number | null
  /**
   * The IANA zone whose day today() is, when the source names one: an attached server's
   * `timezone` (its config's, which need not be this app's). Undefined: the app's own.
   */
  timezone?(): string | undefined
  /**
   * Of today's calls, those billed per token whose model has no known price: counted as $0 in
   * today(), which is then a lower bound (the summary's `today_unpriced_requests`). 0 when unknown.
   */
  unpriced?(): number
  /** True while the server answers but refuses the dashboard token (HTTP 401/403), so today() is null though it runs. */
  refused?(): boolean
  /** The status of an attached server's last answer when it was an error other than a refused token (a 500, a 404), so today() is null though it runs; null otherwise. */
  errorStatus?(): number | null
  /** `fn` runs whenever the spend may have changed; returns an unsubscribe function. */
  subscribe(fn: () => void): () => void
  stop(): void
}

export interface LedgerSpendOptions {
  /**
   * The ledger's store (the server's `context.store`), read for today's calls of no known price as
   * the dashboard's summary reads them: an unpriced call costs $0, so the counters never move for it.
   * Without it, unpriced() is 0.
   */
  store?: SqlReader
  /** How often the store is read for them (default every 5 seconds: a count of the index of unpriced calls, on the thread that proxies calls). */
  pollMs?: number
  timers?: Timers
}

/**
 * In-process: the ledger's in-memory counters (O(1)), told the moment they change: a call
 * recorded, and also calls stored another way (imported, a batch's requests read from its
 * results, another instance's), which no `onCall` announces. Today's unpriced calls are read
 * from the store (`opts.store`) every 5 seconds: stored, imported or re-priced, they show within that.
 */
export function ledgerSpend(ledger: Pick<Ledger, 'spend'>, opts: LedgerSpendOptions = {}): SpendSource {
  const offs: (() => void)[] = []
  const listeners = new Set<() => void>()
  const timers = opts.timers ?? realTimers
  const store = opts.store
  let unpriced = 0
  let timer: unknown = null
  let stopped = false
  // Read on a timer of its own, never on the path of a call being recorded (the spend's onChange).
  const read = async (): Promise<void> => {
    timer = null
    if (!store || stopped) return
    try {
      const day = ledger.spend.clock.dayOf(ledger.spend.totalsAt())
      const n = await unpricedIn(store, day, null)
      if (!stopped && n !== unpriced) {
        unpriced = n
        for (const l of listeners) l()
      }
    } catch {
      // the count is advisory (a store closing at shutdown): the last one stays
    }
    if (!stopped) timer = timers.setTimeout(() => void read(), opts.pollMs ?? 5000)
  }
  void read()
  return {
    today: () => ledger.spend.totals().day,
    unpriced: () => unpriced,
    subscribe(fn) {
      const off = ledger.spend.onChange(() => fn())
      listeners.add(fn)
      const both = () => {
        off()
        listeners.delete(fn)
      }
      offs.push(both)
      return both
    },
    stop() {
      stopped = true
      if (timer !== null) timers.clearTimeout(timer)
      timer = null
      for (const off of offs.splice(0)) off()
      listeners.clear()
    },
  }
}

/** How an attached server is polled for its spend (default every 500 ms: the tray promises an update within about a second of a call). */
export type HttpSpendOptions = HttpPollOptions

/**
 * Attached to another Burnrate (the headless one owns the port): reads
 * `GET /api/dashboard/summary` twice a second and reports when `today_spend_usd` or
 * `today_unpriced_requests` changes, or
 * whether the server refuses the dashboard token or answers with another error (a 500). Its `timezone` says whose day that is: the
 * server's, which the app's own config need not share.
 */
export function httpSpend(baseUrl: string, opts: HttpSpendOptions = {}): SpendSource {
  const listeners = new Set<() => void>()
  let value: number | null = null
  let zone: string | undefined
  let refused = false
  let failed: number | null = null
  let unpriced = 0
  const poller = pollJson(baseUrl, '/api/dashboard/summary', 500, opts, (body, status) => {
    const summary = body as Partial<Summary> | undefined
    const day = summary?.today_spend_usd
    const v = typeof day === 'number' && Number.isFinite(day) ? day : null
    const tz = typeof summary?.timezone === 'string' && summary.timezone !== '' ? summary.timezone : undefined
    const r = status === 401 || status === 403
    const f = status !== null && !r ? status : null
    // A server from before the count (no field) has none to say.
    const count = summary?.today_unpriced_requests
    const u = typeof count === 'number' && Number.isFinite(count) && count > 0 ? count : 0
    if (v === value && r === refused && f === failed && tz === zone && u === unpriced) return
    value = v
    zone = tz
    refused = r
    failed = f
    unpriced = u
    for (const l of listeners) l()
  })
  return {
    today: () => value,
    unpriced: () => unpriced,
    timezone: () => zone,
    refused: () => refused,
    errorStatus: () => failed,
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
