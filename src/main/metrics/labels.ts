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
    const v = raw.length > MAX_LENGTH ? raw.slice(0, MAX_LENGTH) : raw
    if (this.seen.has(v)) return v
    if (this.seen.size >= this.limit) return OTHER
    this.seen.add(v)
    return v
  }
}

/** A call's `billing` as a label value: two values only (a record without one is `api`, as the ledger stores it). */
export function billingLabel(billing: CallBilling | undefined): CallBilling {
  return billing === 'subscription' ? 'subscription' : 'api'
}
