import type { CallBilling } from '../../shared/api'

/** Label values Burnrate puts on a series that come from clients (model, agent, tenant). */
export const OTHER = 'other'

/** Longest label value kept; longer ones are cut (a model name is never this long). */
const MAX_LENGTH = 100

/**
 * Keeps one label's values bounded: the first `limit` distinct values are used as they are,
 * every later one becomes `other`. Model, agent and tenant names come from what clients send
 * (a typo in a model name, an `X-Burnrate-Agent` header), so without a bound a careless or
 * hostile client could create series without end.
 */
export class BoundedLabel {
  private readonly seen = new Set<string>()

  constructor(readonly limit: number) {}

  value(raw: string): string {
    const v = wellFormed(raw.length > MAX_LENGTH ? raw.slice(0, cutAt(raw)) : raw)
    if (this.seen.has(v)) return v
    if (this.seen.size >= this.limit) return OTHER
    this.seen.add(v)
    return v
  }
}

/** Where a value longer than MAX_LENGTH is cut: never between the two halves of a character outside the BMP (an emoji). */
function cutAt(raw: string): number {
  const last = raw.charCodeAt(MAX_LENGTH - 1)
  return last >= 0xd800 && last <= 0xdbff ? MAX_LENGTH - 1 : MAX_LENGTH
}

/**
 * The value as it is written out: a lone half of a UTF-16 pair (a client's JSON may send `"\ud83d"`)
 * as U+FFFD, which is what UTF-8 makes of it in a scrape and a collector of it in OTLP. Kept apart
 * from a U+FFFD sent as such, the two were two series with one name: Prometheus keeps one of two
 * samples of a series in a scrape and drops the other, with its calls, tokens and cost.
 */
function wellFormed(v: string): string {
  return (v as unknown as { toWellFormed(): string }).toWellFormed()
}

/** A call's `billing` as a label value: two values only (a record without one is `api`, as the ledger stores it). */
export function billingLabel(billing: CallBilling | undefined): CallBilling {
  return billing === 'subscription' ? 'subscription' : 'api'
}
