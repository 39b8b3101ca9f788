import type { CallLedger as Ledger } from '../ledger/types'
import type { Summary } from '../../shared/api'
import { type HttpPollOptions, pollJson } from './http-poll'

/** Where the tray reads today's spend: the ledger in this process, or an attached server over HTTP. */
export interface SpendSource {
  /** Today's spend in USD, or null while it cannot be read. */
  today(): number | null
  /**
   * The IANA zone whose day today() is, when the source names one: an attached server's
   * `timezone` (its config's, which need not be this app's). Undefined: the app's own.
   */
  timezone?(): string | undefined
  /** True while the server answers but refuses the dashboard token (HTTP 401/403), so today() is null though it runs. */
  refused?(): boolean
  /** `fn` runs whenever the spend may have changed; returns an unsubscribe function. */
  subscribe(fn: () => void): () => void
  stop(): void
}

/**
 * In-process: the ledger's in-memory counters (O(1)), told the moment they change: a call
 * recorded, and also calls stored another way (imported, a batch's requests read from its
 * results, another instance's), which no `onCall` announces.
 */
export function ledgerSpend(ledger: Pick<Ledger, 'spend'>): SpendSource {
  const offs: (() => void)[] = []
  return {
    today: () => ledger.spend.totals().day,
    subscribe(fn) {
      const off = ledger.spend.onChange(() => fn())
      offs.push(off)
      return off
    },
    stop() {
      for (const off of offs.splice(0)) off()
    },
  }
}

/** How an attached server is polled for its spend (default every 500 ms: the tray promises an update within about a second of a call). */
export type HttpSpendOptions = HttpPollOptions

/**
 * Attached to another Burnrate (the headless one owns the port): reads
 * `GET /api/dashboard/summary` twice a second and reports when `today_spend_usd` changes, or
 * whether the server refuses the dashboard token. Its `timezone` says whose day that is: the
 * server's, which the app's own config need not share.
 */
export function httpSpend(baseUrl: string, opts: HttpSpendOptions = {}): SpendSource {
  const listeners = new Set<() => void>()
  let value: number | null = null
  let zone: string | undefined
  let refused = false
  const poller = pollJson(baseUrl, '/api/dashboard/summary', 500, opts, (body, status) => {
    const summary = body as Partial<Summary> | undefined
    const day = summary?.today_spend_usd
    const v = typeof day === 'number' && Number.isFinite(day) ? day : null
    const tz = typeof summary?.timezone === 'string' && summary.timezone !== '' ? summary.timezone : undefined
    const r = status === 401 || status === 403
    if (v === value && r === refused && tz === zone) return
    value = v
    zone = tz
    refused = r
    for (const l of listeners) l()
  })
  return {
    today: () => value,
    timezone: () => zone,
    refused: () => refused,
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
