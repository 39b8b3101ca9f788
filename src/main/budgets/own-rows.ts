import type { CallRecord } from '../ledger/record'
import type { HistoryRow } from './meter-book'

/**
 * This instance's own calls the last read of the meters' calls does not hold (PostgreSQL mode:
 * counted after it began and missed by its snapshot, or counted since), as HISTORY_SQL's rows
 * (./shared-history.ts): a reload from the read's rows alone (a rule change, the shared rules'
 * first read) dropped them from the meters until the next read, and the call that crossed a
 * threshold with them was counted under it, its crossing then taken as announced by that read.
 */
export class OwnRows {
  private rows = new Map<string, HistoryRow>()

  add(call: CallRecord): void {
    const t = Math.floor(call.ts / 60_000) * 60_000
    const requested = call.requested_model ?? null
    const id = JSON.stringify([call.api_key_hash, call.provider, call.model, requested, call.agent, call.tenant, call.session, t])
    // Money only: a plan's (subscription) call has an API-equivalent value, not a cost (as HISTORY_SQL).
    const cost = call.billing === 'subscription' ? 0 : call.cost_usd
    const r = this.rows.get(id)
    if (r) {
      r.cost += cost
      r.last = Math.max(r.last, call.ts)
      if (call.key_hint > r.key_hint) r.key_hint = call.key_hint
      return
    }
    this.rows.set(id, {
      api_key_hash: call.api_key_hash,
      key_hint: call.key_hint,
      provider: call.provider,
      model: call.model,
      requested,
      agent: call.agent,
      tenant: call.tenant,
      session: call.session,
      t,
      cost,
      tokens: 0,
      requests: 0,
      last: call.ts,
    })
  }

  /** Forgets them all (a read's rows now hold them, or its missed calls are added again). */
  clear(): void {
    this.rows = new Map()
  }

  list(): HistoryRow[] {
    return [...this.rows.values()]
  }
}
